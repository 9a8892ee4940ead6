"""Two coordinator processes on one Redis at once, both running the failover
monitor: a dead printer is failed over once and no job moves twice."""

from __future__ import annotations

import time
from typing import Any

from badgeline.localvenue import LocalVenue
from tests.failover.checks import (
    automatic_decisions,
    check_printed_once,
    failover_moves,
    log_events,
    printed_at,
    submit_many,
    wait_all_printed,
    wait_for,
    wait_for_decision,
)
from tests.failover.conftest import VenueFactory

# How long the failover history must stay as it is before the test believes it.
SETTLED_S = 1.5


def executed(venue: LocalVenue, printer_id: str) -> list[dict[str, Any]]:
    """Failover executions for the printer logged by either coordinator."""
    return [e for name in ("coordinator", "coordinator-2")
            for e in log_events(venue, name, "printer_failover_executed")
            if e["dead_printer_id"] == printer_id]  # fmt: skip


def check_failed_over_once(venue: LocalVenue, printer_id: str) -> dict[str, Any]:
    """Exactly one decision, seen alike by both coordinators, and it stays one."""
    settled_at = time.monotonic() + SETTLED_S
    while True:
        seen = [automatic_decisions(venue, printer_id, url) for url in venue.coordinator_urls]
        assert seen[0] == seen[1]
        assert len(seen[0]) == 1, seen[0]
        assert len(executed(venue, printer_id)) == 1
        if time.monotonic() > settled_at:
            return seen[0][0]
        time.sleep(0.1)


def test_two_coordinators_on_one_redis_fail_a_printer_over_once(
    make_venue: VenueFactory, badge_pdf: bytes
) -> None:
    venue = make_venue(start=False, coordinator_count=2)
    second = venue.coordinator_urls[1]
    venue.agent_overrides["printer-b"] = {"coordinator_url": second}
    venue.start()
    ref = venue.upload_badge(badge_pdf)
    job_ids = submit_many(venue, "printer-a", ref, 20, "one")
    job_ids += submit_many(venue, "printer-a", ref, 20, "two", url=second)
    wait_for(lambda: len(printed_at(venue)["printer-a"]) >= 3, 30, "printer-a to print", venue)

    venue.set_fault("printer-a", "jam")
    wait_for_decision(venue, "printer-a")
    wait_all_printed(venue, job_ids)

    decision = check_failed_over_once(venue, "printer-a")
    assert decision["drained_job_ids"]
    jobs = check_printed_once(venue, job_ids)
    for job_id, job in jobs.items():
        reprinted = decision["inflight_resolution"].get(job_id) == "reprinted"
        moved = job_id in decision["drained_job_ids"] or reprinted
        assert len(failover_moves(job)) == int(moved), job["history"]

    # A silent death is noticed by both monitors' heartbeat checks at once.
    venue.kill_agent("printer-b")
    wait_for_decision(venue, "printer-b")
    check_failed_over_once(venue, "printer-b")
