"""What the kiosk's process-level tests check at the end: each scan the kiosk
acknowledged is one job under the key it was given, and that job came out of the
emulators exactly once (their `GET /printed`, the ground truth)."""

from __future__ import annotations

import contextlib
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

from badgeline.localvenue import LocalVenue, wait_until
from tests.e2e.venue import prints_by_job
from tests.kiosk.scanning_kiosk import attendee


def outbox_counts(outbox: Path) -> Counter[str]:
    """Scans by delivery state, read beside the running kiosk (WAL lets a reader in)."""
    if not outbox.exists():
        return Counter()
    with contextlib.closing(sqlite3.connect(f"{outbox.as_uri()}?mode=ro", uri=True,
                                            timeout=10)) as db:  # fmt: skip
        return Counter(dict(db.execute("SELECT delivery, count(*) FROM scans GROUP BY 1")))


def jobs_by_scan(venue: LocalVenue, numbers: list[int]) -> dict[int, list[dict[str, Any]]]:
    # one attendee has one or two jobs: one page holds them
    return {n: venue.api("GET", f"/v1/jobs?attendee_id={attendee(n)}")["items"] for n in numbers}


def assert_each_printed_once(
    venue: LocalVenue, kept: dict[int, str], unsure: set[int], timeout_s: float
) -> Counter[str | None]:
    """Every kept scan: one job, its key, one print. A scan whose submit was cut short
    (`unsure`: the kiosk never said it was kept): at most one job and one print.
    Nothing else printed. Returns the prints by job id."""
    jobs = jobs_by_scan(venue, sorted(kept))
    assert {n: len(found) for n, found in jobs.items() if len(found) != 1} == {}
    assert {n: found[0]["idempotency_key"] for n, found in jobs.items()} == kept
    job_ids = {found[0]["job_id"] for found in jobs.values()}
    unsure_jobs = jobs_by_scan(venue, sorted(unsure))
    assert all(len(found) <= 1 for found in unsure_jobs.values()), unsure_jobs
    job_ids |= {found[0]["job_id"] for found in unsure_jobs.values() if found}
    wanted = {found[0]["job_id"] for found in jobs.values()}

    def all_out() -> bool:
        counts = prints_by_job(venue)
        return all(counts[job_id] for job_id in wanted)

    try:
        wait_until(all_out, timeout_s, f"{len(wanted)} badges to come out of the emulators")
    except TimeoutError as timed_out:
        counts = prints_by_job(venue)
        missing = sorted(job_id for job_id in wanted if not counts[job_id])
        states = Counter(venue.job(job_id)["state"] for job_id in missing)
        printers = venue.api("GET", "/v1/printers")["items"]
        raise AssertionError(f"{timed_out}: {len(missing)} not out, by state {dict(states)};"
                             f" printers: {[(p['printer_id'], p['state']) for p in printers]}"
                             ) from None  # fmt: skip
    counts = prints_by_job(venue)
    assert {job_id: n for job_id, n in counts.items() if n != 1} == {}
    assert set(counts) <= job_ids, set(counts) - job_ids
    return counts
