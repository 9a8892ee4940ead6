"""The job a printer was printing when it failed: the acknowledgement check.

To catch the agent between its start grant and its ack, its printer link runs
through a relay that holds the printer's status replies: the badge goes out (the
emulator prints it) and the agent waits in its confirmation probe, ack not sent.
"""

from __future__ import annotations

from collections.abc import Callable

from badgeline.localvenue import LocalVenue
from tests.chaos.harness.proxy import ThreadedFaultProxy
from tests.failover.checks import (
    UNCERTAIN,
    check_printed_once,
    failover_moves,
    printed_at,
    wait_all_printed,
    wait_for,
    wait_for_decision,
    wait_for_resolution,
)
from tests.failover.conftest import VenueFactory

PRINTERS = ("printer-a", "printer-b")
# The agent's probe loop stays out of the way (it shares the printer link), and a
# held status reply is waited for well past the moments this test needs.
PINNABLE_AGENT = {"probe_interval_s": 30.0, "retry_max_s": 1.0}


def pin_agent_mid_print(
    venue: LocalVenue, printer_relay: ThreadedFaultProxy, badge_pdf: bytes
) -> str:
    """One badge for printer-a, printed, with its agent still waiting to confirm it."""
    printer_relay.hold_replies()
    job_id: str = venue.submit("printer-a", "att-inflight", venue.upload_badge(badge_pdf))["job_id"]
    wait_for(lambda: job_id in printed_at(venue)["printer-a"], 20, "the badge to come out", venue)
    assert venue.job(job_id)["state"] == "printing"
    return job_id


def venue_with_relays(
    make_venue: VenueFactory, relays: Callable[[int], ThreadedFaultProxy], *, ack_grace_s: float
) -> tuple[LocalVenue, ThreadedFaultProxy, ThreadedFaultProxy]:
    """printer-a's agent reaches its printer and the coordinator through relays."""
    venue = make_venue(coordinator={"ack_grace_s": ack_grace_s}, start=False, printer_ids=PRINTERS)
    printer_relay = relays(venue.printers["printer-a"].port)
    network = relays(venue.coordinator_port)
    venue.agent_overrides["printer-a"] = {
        **PINNABLE_AGENT, "coordinator_url": network.url,
        "printer": {"port": printer_relay.port, "timeout_s": 10.0},
    }  # fmt: skip
    venue.start()
    return venue, printer_relay, network


def test_an_ack_that_arrives_within_the_grace_period_is_not_reprinted(
    make_venue: VenueFactory, relays: Callable[[int], ThreadedFaultProxy], badge_pdf: bytes
) -> None:
    venue, printer_relay, network = venue_with_relays(make_venue, relays, ack_grace_s=8.0)
    job_id = pin_agent_mid_print(venue, printer_relay, badge_pdf)

    # The network drops, then the printer answers: the agent knows the badge is
    # out, but its ack (and its heartbeats) cannot get through.
    network.cut()
    printer_relay.release_replies()
    decision = wait_for_decision(venue, "printer-a")
    assert decision["inflight_job_ids"] == [job_id]
    network.heal()
    resolved = wait_for_resolution(venue, "printer-a", [job_id])

    assert resolved == {job_id: "acked"}
    jobs = check_printed_once(venue, [job_id])
    assert not jobs[job_id]["possible_duplicate"]
    assert jobs[job_id]["printer_id"] == "printer-a"
    assert not failover_moves(jobs[job_id])
    assert printed_at(venue) == {"printer-a": [job_id], "printer-b": []}


def test_an_ack_that_never_arrives_is_reprinted_once_and_flagged(
    make_venue: VenueFactory, relays: Callable[[int], ThreadedFaultProxy], badge_pdf: bytes
) -> None:
    venue, printer_relay, _ = venue_with_relays(make_venue, relays, ack_grace_s=3.0)
    job_id = pin_agent_mid_print(venue, printer_relay, badge_pdf)

    venue.kill_agent("printer-a")  # the Pi loses power before it could confirm
    decision = wait_for_decision(venue, "printer-a")
    assert decision["inflight_job_ids"] == [job_id]
    wait_all_printed(venue, [job_id])
    resolved = wait_for_resolution(venue, "printer-a", [job_id])

    assert resolved == {job_id: "reprinted"}
    jobs = check_printed_once(venue, [job_id])
    assert jobs[job_id]["possible_duplicate"]
    assert jobs[job_id]["printer_id"] == "printer-b"
    assert len(failover_moves(jobs[job_id])) == 1
    assert printed_at(venue) == {"printer-a": [job_id], "printer-b": [job_id]}


def test_an_uncertain_report_after_the_failover_goes_to_a_healthy_printer(
    make_venue: VenueFactory, relays: Callable[[int], ThreadedFaultProxy], badge_pdf: bytes
) -> None:
    venue, printer_relay, network = venue_with_relays(make_venue, relays, ack_grace_s=8.0)
    job_id = pin_agent_mid_print(venue, printer_relay, badge_pdf)

    # Cut off, printer-a is failed over; then its printer jams and the link to
    # it drops with the printer's "on paper" answer (GS ( H) still unread, so
    # the agent cannot tell whether the badge came out: `uncertain`, reported
    # once the network is back, while printer-a is still dead.
    network.cut()
    wait_for_decision(venue, "printer-a")
    venue.set_fault("printer-a", "jam")
    printer_relay.cut()
    printer_relay.release_replies()
    printer_relay.heal()
    network.heal()
    wait_all_printed(venue, [job_id], timeout_s=30)

    jobs = check_printed_once(venue, [job_id])
    job = jobs[job_id]
    assert job["possible_duplicate"] and job["printer_id"] == "printer-b"
    reasons = [entry["reason"] for entry in job["history"]]
    assert any(UNCERTAIN in reason for reason in reasons), reasons
    assert any(reason.startswith("unparked: printer-b") for reason in reasons), reasons
    assert printed_at(venue) == {"printer-a": [job_id], "printer-b": [job_id]}
    # The acknowledgement check then finds it printed: no second re-dispatch.
    assert wait_for_resolution(venue, "printer-a", [job_id])[job_id] != "reprinted"
    assert not failover_moves(venue.job(job_id))
