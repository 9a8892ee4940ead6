"""Three stateless coordinator replicas on one Redis under concurrent load: every
job is accepted once however many replicas a kiosk's retries reach, and agents
leasing from different replicas print each job exactly once (counted at the
emulators). test_replicas.py covers two replicas deciding a failover once; the
chaos test kills replicas; this one is the plain load path across three."""

from __future__ import annotations

import collections
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from badgeline.localvenue import http_json
from tests.failover.checks import check_printed_once, log_events, wait_all_printed
from tests.failover.conftest import VenueFactory

KEYS = 30  # distinct scans, each sent to all three replicas at once


def test_three_replicas_accept_each_job_once_and_print_it_once(
    make_venue: VenueFactory, badge_pdf: bytes
) -> None:
    # GIVEN three coordinators on one Redis, each printer's agent talking to its own
    venue = make_venue(start=False, coordinator_count=3)
    replicas = venue.coordinator_urls
    for printer_id, url in zip(venue.printer_ids, replicas, strict=True):
        venue.agent_overrides[printer_id] = {"coordinator_url": url}
    venue.start()
    ref = venue.upload_badge(badge_pdf)

    # WHEN kiosks send every scan to all three replicas at once (a retry storm)
    def submit(attempt: tuple[int, str]) -> tuple[int, Any]:
        number, url = attempt
        body = {"attendee_id": f"rep-{number:03d}", "badge_pdf_ref": ref,
                "printer_target": venue.printer_ids[number % 3], "priority": 100,
                "idempotency_key": f"scan-rep-{number:03d}"}  # fmt: skip
        return number, http_json("POST", url + "/v1/jobs", body, venue.kiosk_token)

    attempts = [(number, url) for number in range(KEYS) for url in replicas]
    with ThreadPoolExecutor(max_workers=12) as pool:
        answers = list(pool.map(submit, attempts))

    # THEN each scan became one job, created by exactly one replica's answer
    by_key: dict[int, list[Any]] = collections.defaultdict(list)
    for number, answer in answers:
        by_key[number].append(answer)
    job_ids = []
    for number, seen in sorted(by_key.items()):
        assert len({a["job_id"] for a in seen}) == 1, (number, seen)
        assert sorted(a["duplicate"] for a in seen) == [False, True, True], (number, seen)
        job_ids.append(seen[0]["job_id"])

    # AND every job came out of an emulator exactly once
    wait_all_printed(venue, job_ids, timeout_s=60)
    check_printed_once(venue, job_ids)
    # AND each agent leased from its own replica (a failover on a crowded machine may
    # move a job to another printer, and so to that printer's replica: still one print)
    leased_ids = set()
    for index, printer_id in enumerate(venue.printer_ids):
        leased = log_events(venue, venue.coordinator_name(index), "job_leased")
        assert leased and {e["printer_id"] for e in leased} == {printer_id}
        leased_ids |= {e["job_id"] for e in leased}
    assert leased_ids == set(job_ids)
