"""The coordinator goes away (SIGTERM) for 5 s while an agent is in the middle of
a print: the agent finishes it, keeps the ack, and delivers it once the
coordinator is back on the same port with the same state; the job ends printed.

To have a print in flight at a known moment, the agent talks to its emulator
through a relay that holds the printer's status replies: the agent then sits
in its post-print status check, start grant taken, until the test releases
them. (The emulator's slow mode would not do: a status query is answered at
once however slowly the print head goes, so the agent never waits for it.)
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from badgeline.localvenue import wait_until
from badgeline.samples import sample_badge_pdf
from tests.e2e.conftest import VenueFactory
from tests.e2e.venue import (
    E2EVenue,
    ThreadedRelay,
    journal_rows,
    printed_on,
    prints_by_job,
    submitted_job_id,
    wait_until_state,
)

PRINTER = "printer-a"
# Longer than the coordinator's heartbeat staleness (3 missed beats of 1 s), so it
# comes back to a printer it has to consider silent, and long enough for the agent
# to retry its calls several times while it is gone.
DOWN_FOR_S = 5.0
# Longer than the test holds the replies, so the held status check is slow, not failed.
PRINTER_TIMEOUT_S = 30.0
# The agent's back-off is capped at retry_max_s: once the coordinator is back, the
# ack arrives within one cap. At the default cap (15 s) the next badge's start call
# waited up to that long after the return, which is the agent's back-off and not
# what this test is about; 2 s keeps it short.
RETRY_MAX_S = 2.0
ACK_AFTER_RETURN_S = 45.0


@pytest.fixture
def outage_venue(start_venue: VenueFactory) -> Iterator[tuple[E2EVenue, ThreadedRelay]]:
    venue = start_venue(start=False, printer_ids=(PRINTER,))
    relay = ThreadedRelay("127.0.0.1", venue.printers[PRINTER].port)
    relay.start()
    venue.agent_settings_for[PRINTER] = {
        "printer": {"port": relay.port, "timeout_s": PRINTER_TIMEOUT_S},
        "retry_max_s": RETRY_MAX_S,
    }
    try:
        venue.start()
        yield venue, relay
    finally:
        relay.release_replies()
        venue.stop()
        relay.stop()


def journal_state(venue: E2EVenue, job_id: str) -> str | None:
    states = [row["state"] for row in journal_rows(venue, PRINTER) if row["job_id"] == job_id]
    return states[-1] if states else None


@pytest.mark.timeout(180)
def test_acks_of_a_print_finished_while_the_coordinator_was_down_arrive_after_it_returns(
    outage_venue: tuple[E2EVenue, ThreadedRelay],
) -> None:
    venue, relay = outage_venue
    coordinator = venue.processes["coordinator"]
    ref = venue.upload_badge(sample_badge_pdf("A-OUT-0001", "Olga Outage", "Ten Seconds Ltd"))

    # GIVEN an agent holding the start grant of the first of three jobs, its print
    # not yet confirmed (the printer's status replies are held)
    relay.hold_replies()
    jobs = [submitted_job_id(venue.submit(PRINTER, f"A-OUT-{n:04d}", ref)) for n in range(3)]
    first = jobs[0]
    wait_until(lambda: venue.job(first)["state"] == "printing", 30, "the first job's grant")
    wait_until(lambda: journal_state(venue, first) == "granted", 10, "the grant in the journal")

    # WHEN the coordinator is stopped with SIGTERM, and only then the print completes
    asked_at = time.time()
    coordinator.stop(timeout_s=60)
    down_at = time.time()
    relay.release_replies()

    # THEN the agent finishes the badge and journals it printed while nobody can hear the ack
    wait_until(lambda: journal_state(venue, first) == "printed", 30,
               "the agent to journal the first badge printed")  # fmt: skip
    assert [row["job_id"] for row in printed_on(venue, PRINTER)] == [first]
    acked = [row["job_id"] for row in journal_rows(venue, PRINTER) if row["state"] == "acked"]
    assert acked == [], "an ack got through to a stopped coordinator"

    # WHEN the coordinator comes back after 5 s, on the same port and state directory
    time.sleep(max(0.0, DOWN_FOR_S - (time.time() - down_at)))
    back_at = time.time()
    venue.start_coordinator()

    # THEN the held ack arrives after its return, from the lease that printed the badge,
    # and every job ends printed, each badge out of the printer exactly once
    views = wait_until_state(venue, jobs, "printed", timeout_s=ACK_AFTER_RETURN_S)
    history = views[first]["history"]
    report(history, asked_at, down_at, back_at)
    for decision in venue.api("GET", "/v1/failovers")["items"]:
        print(f"  failover {decision['decision_id']} at {decision['decided_at'] - back_at:+.2f}:"
              f" {decision['reason']}; in flight {decision['inflight_resolution']}")  # fmt: skip
    [lease_id] = [row["lease_id"] for row in journal_rows(venue, PRINTER)
                  if row["job_id"] == first and row["outcome"] == "printed"]  # fmt: skip
    ack = next(entry for entry in history if entry["to"] == "printed")
    assert ack["at"] >= back_at and ack["actor"] == f"agent:agent-{PRINTER}", ack
    assert lease_id in ack["reason"], ack
    # (When the ack comes later than the coordinator's ack_grace_s after its return,
    # the job passes through failover first: parked and flagged possible_duplicate.
    # With one printer nothing can print it again, so it still prints once.)
    assert [views[job_id]["prints"] for job_id in jobs] == [1, 1, 1]
    counts = prints_by_job(venue)
    assert [counts[job_id] for job_id in jobs] == [1, 1, 1]
    wait_until(lambda: journal_state(venue, first) == "acked", 10, "the agent to see its ack")


def report(history: list[dict[str, Any]], asked_at: float, down_at: float, back_at: float) -> None:
    """The first job's trail, for the record (pytest -s shows it)."""
    print(f"\ncoordinator: SIGTERM to exit {down_at - asked_at:.1f} s, down for"
          f" {back_at - down_at:.1f} s; first job's trail, seconds from the restart:")  # fmt: skip
    for entry in history:
        print(f"  {entry['at'] - back_at:+7.2f} {entry['from']} -> {entry['to']}"
              f" by {entry['actor']}: {entry['reason']}")  # fmt: skip
