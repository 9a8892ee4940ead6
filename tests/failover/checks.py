"""What the failover tests wait for, and the exactly-once check counted at the emulators."""

from __future__ import annotations

import collections
import json
import re
import time
from collections.abc import Callable, Iterable
from typing import Any

from badgeline.localvenue import LocalVenue, http_json

FAILOVER_ACTOR = "coordinator:failover"
# A failover (or drain) decision moving a job: "fo-printer-a-1: printer declared dead, moved
# from printer-a to printer-b", or re-dispatching the job a dead printer was printing.
FAILOVER_MOVE = re.compile(r"^(fo|drain)-\S+: .*(moved from|re-dispatched to)")
UNCERTAIN = "agent cannot tell whether it printed"


def wait_for(
    condition: Callable[[], Any],
    timeout_s: float,
    what: str | Callable[[], str],
    venue: LocalVenue | None = None,
    interval_s: float = 0.1,
) -> Any:
    """Poll `condition` until it is truthy; fail with what was awaited and the venue's log."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            described = what() if callable(what) else what
            message = f"timed out after {timeout_s} s waiting for {described} (last: {result!r})"
            if venue is not None:
                message += "\n" + log_tail(venue)
            raise AssertionError(message)
        time.sleep(interval_s)


def log_tail(venue: LocalVenue, lines: int = 25) -> str:
    """The last warnings and errors of every process of the venue, for a failure message."""
    parts = []
    for log in sorted((venue.root / "logs").glob("*.log")):
        noisy = [line for line in log.read_text(errors="replace").splitlines()
                 if "warning" in line.lower() or "error" in line.lower()]  # fmt: skip
        if noisy:
            parts.append(f"--- {log.name}\n" + "\n".join(line[:300] for line in noisy[-lines:]))
    return "\n".join(parts)


def log_events(venue: LocalVenue, process: str, event: str) -> list[dict[str, Any]]:
    """The JSON log lines with this `event` that a process of the venue wrote."""
    found = []
    for line in (venue.root / "logs" / f"{process}.log").read_text(errors="replace").splitlines():
        if f'"{event}"' not in line:
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if record.get("event") == event:
            found.append(record)
    return found


# ------------------------------------------------------------------ the venue's state


def submit_many(
    venue: LocalVenue, target: str, ref: str, count: int, tag: str = "att", url: str | None = None
) -> list[str]:
    """Accept `count` jobs for `target` (through the coordinator at `url`); their ids in order."""
    ids = []
    for n in range(count):
        body = {
            "attendee_id": f"{tag}-{n:04d}", "badge_pdf_ref": ref, "printer_target": target,
            "priority": 100, "idempotency_key": f"scan-{tag}-{n:04d}-{time.time_ns()}",
        }  # fmt: skip
        answer = http_json("POST", (url or venue.url) + "/v1/jobs", body, venue.kiosk_token)
        ids.append(answer["job_id"])
    return ids


def printed_at(venue: LocalVenue) -> dict[str, list[str | None]]:
    """Job ids in the order each emulator printed them."""
    by_printer: dict[str, list[str | None]] = {p: [] for p in venue.printer_ids}
    for row in venue.printed_rows():
        by_printer[row["printer_id"]].append(row["job_id"])
    return by_printer


def printer_state(venue: LocalVenue, printer_id: str) -> str:
    return venue.printer_states().get(printer_id, "unknown")


def failovers(venue: LocalVenue, url: str | None = None) -> list[dict[str, Any]]:
    answer = http_json("GET", (url or venue.url) + "/v1/failovers", token=venue.operator_token)
    decisions: list[dict[str, Any]] = answer["items"]
    return decisions


def automatic_decisions(
    venue: LocalVenue, printer_id: str, url: str | None = None
) -> list[dict[str, Any]]:
    return [
        d for d in failovers(venue, url)
        if d["dead_printer_id"] == printer_id and d["decision_id"].startswith("fo-")
    ]  # fmt: skip


def wait_for_decision(
    venue: LocalVenue, printer_id: str, timeout_s: float = 15, interval_s: float = 0.1
) -> dict[str, Any]:
    """The failover decision the coordinator made when `printer_id` died."""
    decisions: list[dict[str, Any]] = wait_for(
        lambda: automatic_decisions(venue, printer_id), timeout_s,
        f"the failover decision for {printer_id}", venue, interval_s,
    )  # fmt: skip
    return decisions[-1]


def wait_for_resolution(
    venue: LocalVenue, printer_id: str, job_ids: list[str], timeout_s: float = 20
) -> dict[str, str]:
    """The outcome of the acknowledgement check of each in-flight job of the printer's
    latest failover, once every one of `job_ids` has one (after the ack grace period)."""

    def outcome() -> dict[str, str] | None:
        resolved: dict[str, str] = automatic_decisions(venue, printer_id)[0]["inflight_resolution"]
        return resolved if all(j in resolved for j in job_ids) else None

    if not job_ids:
        return {}
    found: dict[str, str] = wait_for(outcome, timeout_s, "the acknowledgement check", venue)
    return found


def failover_moves(job: dict[str, Any]) -> list[dict[str, Any]]:
    """The history entries in which a failover decision moved this job to another printer."""
    return [
        entry for entry in job["history"]
        if entry["actor"] == FAILOVER_ACTOR and FAILOVER_MOVE.match(entry["reason"] or "")
    ]  # fmt: skip


def wait_all_printed(venue: LocalVenue, job_ids: Iterable[str], timeout_s: float = 60) -> None:
    """Until every job is `printed` at the coordinator and has come out of some emulator."""
    pending = set(job_ids)

    def done() -> bool:
        out = {row["job_id"] for row in venue.printed_rows()}
        for job_id in sorted(pending & out):
            if venue.job(job_id)["state"] == "printed":
                pending.discard(job_id)
        return not pending

    def describe() -> str:
        states = {j: venue.job(j)["state"] for j in sorted(pending)[:8]}
        return f"{len(pending)} more jobs to print, e.g. {states}"

    wait_for(done, timeout_s, describe, venue, interval_s=0.3)


def check_printed_once(venue: LocalVenue, job_ids: list[str]) -> dict[str, Any]:
    """Every job came out exactly once, counted at the emulators, and nothing else came out.

    The one exception is the rule of the acknowledgement check: a job a failed printer
    was printing when it died (a failover decision's in-flight job, or one its agent
    reported `uncertain`) may come out twice, and then it is flagged possible_duplicate.
    Returns the jobs keyed by id, for further checks.
    """
    rows = venue.printed_rows()
    counts = collections.Counter(row["job_id"] for row in rows)
    strangers = sorted(str(j) for j in counts if j not in set(job_ids))
    assert not strangers, f"badges printed for jobs nobody submitted: {strangers}"
    missing = [j for j in job_ids if counts[j] == 0]
    assert not missing, f"never printed: {missing}"
    jobs = {job_id: venue.job(job_id) for job_id in job_ids}
    inflight = {j for d in failovers(venue) for j in d["inflight_job_ids"]}
    for job_id, prints in counts.items():
        if prints == 1:
            continue
        job = jobs[str(job_id)]
        where = [row["printer_id"] for row in rows if row["job_id"] == job_id]
        reported_uncertain = any(UNCERTAIN in (e["reason"] or "") for e in job["history"])
        assert prints == 2, f"{job_id} printed {prints} times at {where}"
        assert job["possible_duplicate"], f"{job_id} printed twice ({where}) but is not flagged"
        assert job_id in inflight or reported_uncertain, (
            f"{job_id} printed twice ({where}) but was not in flight when its printer died"
        )
    assert all(job["state"] == "printed" for job in jobs.values())
    return jobs
