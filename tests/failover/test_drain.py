"""A printer dies mid-rush: its queue comes out of its peers, each badge once.

The rush goes to printer-a by name; a few badges in, printer-a jams (its agent
reports it) or its Pi loses power (SIGKILL: no goodbye, no more heartbeats).
"""

from __future__ import annotations

from typing import Any

from badgeline.localvenue import LocalVenue
from tests.failover.checks import (
    check_printed_once,
    failover_moves,
    printed_at,
    submit_many,
    wait_all_printed,
    wait_for,
    wait_for_decision,
    wait_for_resolution,
)
from tests.failover.conftest import VenueFactory

PEERS = {"printer-b", "printer-c"}


def start_rush(venue: LocalVenue, badge_pdf: bytes, count: int) -> list[str]:
    """Queue `count` badges on printer-a and wait until it is printing them."""
    job_ids = submit_many(venue, "printer-a", venue.upload_badge(badge_pdf), count)
    wait_for(lambda: len(printed_at(venue)["printer-a"]) >= 3, 30, "printer-a to print", venue)
    return job_ids


def check_drained_to_peers(
    venue: LocalVenue, job_ids: list[str], decision: dict[str, Any], jobs: dict[str, Any]
) -> None:
    drained = decision["drained_job_ids"]
    assert drained, "printer-a had nothing queued when it died: the rush was too short"
    assert set(decision["targets"]) <= PEERS
    assert sum(decision["targets"].values()) == len(drained)
    assert not decision["parked_job_ids"]
    out = printed_at(venue)
    for job_id in drained:
        job = jobs[job_id]
        assert job["printer_id"] in PEERS
        assert job["idempotency_key"].startswith("scan-att-")
        assert len(failover_moves(job)) == 1, job["history"]
        if not job["possible_duplicate"]:
            assert job_id not in out["printer-a"], f"{job_id} was drained yet printed on printer-a"
    # Each peer printed what it was given in the order it was accepted.
    order = {job_id: n for n, job_id in enumerate(job_ids)}
    for peer in PEERS:
        moved_here = [j for j in out[peer] if j in set(drained)
                      and not jobs[str(j)]["possible_duplicate"]]  # fmt: skip
        assert moved_here == sorted(moved_here, key=lambda j: order[str(j)]), peer


def test_a_jammed_printer_drains_to_its_peers_each_badge_once(
    make_venue: VenueFactory, badge_pdf: bytes
) -> None:
    venue = make_venue()
    job_ids = start_rush(venue, badge_pdf, 40)

    venue.set_fault("printer-a", "jam")
    decision = wait_for_decision(venue, "printer-a")
    wait_all_printed(venue, job_ids)

    jobs = check_printed_once(venue, job_ids)
    check_drained_to_peers(venue, job_ids, decision, jobs)
    assert decision["reason"] == "printer declared dead"
    assert venue.printer_states()["printer-a"] == "dead"


def test_a_silently_dead_agent_drains_to_its_peers_each_badge_once(
    make_venue: VenueFactory, badge_pdf: bytes
) -> None:
    venue = make_venue()
    job_ids = start_rush(venue, badge_pdf, 40)

    venue.kill_agent("printer-a")
    decision = wait_for_decision(venue, "printer-a")
    wait_all_printed(venue, job_ids)

    jobs = check_printed_once(venue, job_ids)
    check_drained_to_peers(venue, job_ids, decision, jobs)
    # A job the agent was printing when it died waits out the grace period, then
    # comes back flagged (or its ack came in time: then it is simply printed).
    inflight = decision["inflight_job_ids"]
    resolved = wait_for_resolution(venue, "printer-a", inflight)
    for job_id in inflight:
        assert resolved[job_id] in ("acked", "reprinted"), resolved
        assert jobs[job_id]["possible_duplicate"] == (resolved[job_id] == "reprinted")


def test_a_drain_target_that_dies_mid_drain_is_failed_over_in_turn(
    make_venue: VenueFactory, badge_pdf: bytes
) -> None:
    venue = make_venue()
    job_ids = start_rush(venue, badge_pdf, 60)

    venue.set_fault("printer-a", "jam")
    first = wait_for_decision(venue, "printer-a", interval_s=0.02)
    assert first["targets"].get("printer-b"), first
    # printer-b has just been handed half of printer-a's queue: its Pi dies now.
    venue.kill_agent("printer-b")
    second = wait_for_decision(venue, "printer-b")
    wait_all_printed(venue, job_ids)

    jobs = check_printed_once(venue, job_ids)
    assert set(second["targets"]) == {"printer-c"}, second
    moved_twice = set(first["drained_job_ids"]) & (
        set(second["drained_job_ids"]) | set(second["inflight_job_ids"])
    )
    assert moved_twice, "printer-b had printed all it was given before it died"
    out = printed_at(venue)
    for job_id in moved_twice:
        moves = failover_moves(jobs[job_id])
        assert [m["reason"].split(":")[0] for m in moves] == [
            first["decision_id"], second["decision_id"]
        ], moves  # fmt: skip
        assert jobs[job_id]["printer_id"] == "printer-c"
        if not jobs[job_id]["possible_duplicate"]:
            assert job_id in out["printer-c"]
    for job_id in set(first["drained_job_ids"]) - moved_twice:
        assert len(failover_moves(jobs[job_id])) == 1
