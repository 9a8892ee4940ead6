"""Reconciliation: printed more than once (from the agents' print reports),
possible duplicates, jobs not finished past a deadline, and accepted against
printed, through the API and the CLI."""

from __future__ import annotations

from tests.helpers import findings
from tests.ops.venue import Venue


async def _print_twice(venue: Venue) -> str:
    """A job whose agent could not tell whether it printed, so it was sent
    again; both prints came out and both were reported."""
    agent = venue.agent("printer-a")
    (job_id,) = await venue.submit("printer-a")
    first = (await agent.lease())[0]
    await agent.start(first)
    await agent.ack(first, "uncertain", error="power lost after the grant")
    second = (await agent.lease())[0]
    assert second["job_id"] == job_id and second["job"]["possible_duplicate"] is True
    await agent.start(second)
    await agent.ack(second)
    await agent.ack(first)  # the first badge did come out: a late report of a physical fact
    return job_id


async def test_reconcile_reports_a_double_print_a_flagged_job_and_an_overdue_one(
    venue: Venue,
) -> None:
    # GIVEN a venue where one job printed twice, one printed once, one was
    # canceled and one is still waiting
    agent = venue.agent("printer-a")
    await agent.heartbeat()
    twice = await _print_twice(venue)
    (once,) = await venue.submit("printer-a")
    assert await agent.print_next() == once
    (canceled,) = await venue.submit("printer-a")
    await venue.ops("POST", f"/v1/jobs/{canceled}/cancel")
    (waiting,) = await venue.submit("printer-a")

    # WHEN the operator reconciles with a zero deadline
    report = await venue.ops("GET", "/v1/reconcile?deadline_s=0")

    # THEN the double print is named with its two prints, and it was flagged
    twice_found = findings(report, "printed_more_than_once")
    assert [(j["job_id"], j["prints"]) for j in twice_found] == [(twice, 2)]
    assert [j["job_id"] for j in findings(report, "possible_duplicates")] == [twice]
    # AND the waiting job is not terminal
    overdue = findings(report, "not_terminal")
    assert [(j["job_id"], j["state"]) for j in overdue] == [(waiting, "queued")]
    # AND accepted adds up: printed + canceled + failed + open, nothing unaccounted
    counts = report["counts"]
    assert (counts["accepted"], counts["printed"], counts["canceled"]) == (4, 2, 1)
    assert (counts["failed"], counts["open"], counts["unaccounted"]) == (0, 1, 0)
    assert counts["open_by_state"] == {"queued": 1}

    # AND with a generous deadline the waiting job is not overdue
    relaxed = await venue.ops("GET", "/v1/reconcile?deadline_s=3600")
    assert findings(relaxed, "not_terminal") == []

    # AND the CLI says the same, and --check fails on it
    check = await venue.cli("reconcile", "--deadline", "0", "--check")
    assert check.code == 1, check.err
    assert twice in check.out and waiting in check.out and "NOT CLEAN" in check.out
    as_json = (await venue.cli_ok("reconcile", "--deadline", "0", "--json")).json()
    assert findings(as_json, "printed_more_than_once")[0]["job_id"] == twice
    assert as_json["counts"] == counts


async def test_a_clean_venue_passes_the_check(venue: Venue) -> None:
    # GIVEN every accepted job printed exactly once
    agent = venue.agent("printer-a")
    await agent.heartbeat()
    for job_id in await venue.submit("printer-a", 3):
        assert await agent.print_next() == job_id
    # WHEN the operator checks
    result = await venue.cli_ok("reconcile", "--check", "--deadline", "0")
    # THEN it is clean and the numbers match
    assert "CLEAN" in result.out and "NOT CLEAN" not in result.out
    assert "accepted 3  printed 3" in result.out


async def test_a_repeated_ack_and_a_duplicate_submission_are_counted_once(venue: Venue) -> None:
    # GIVEN a job submitted twice with the same key, and its printed ack sent twice
    agent = venue.agent("printer-a")
    await agent.heartbeat()
    key, attendee = "scan-repeat-0001", "att_repeat"
    (job_id,) = await venue.submit("printer-a", idempotency_key=key, attendee_id=attendee)
    again = await venue.submit("printer-a", status=200, idempotency_key=key, attendee_id=attendee)
    assert again == [job_id]
    leased = (await agent.lease())[0]
    await agent.start(leased)
    await agent.ack(leased)
    await agent.ack(leased)
    # WHEN the operator reconciles
    counts = (await venue.ops("GET", "/v1/reconcile?deadline_s=0"))["counts"]
    # THEN one job was accepted and printed once
    assert (counts["accepted"], counts["printed"], counts["unaccounted"]) == (1, 1, 0)


async def test_a_canceled_job_whose_late_ack_says_it_printed_counts_once(venue: Venue) -> None:
    # GIVEN a job whose agent could not tell whether it printed: sent again, and
    # the operator cancels the second copy (the attendee has a badge)
    agent = venue.agent("printer-a")
    await agent.heartbeat()
    (job_id,) = await venue.submit("printer-a")
    first = (await agent.lease())[0]
    await agent.start(first)
    await agent.ack(first, "uncertain", error="link lost after the grant")
    await venue.ops("POST", f"/v1/jobs/{job_id}/cancel")
    # WHEN the first attempt's late report says the badge did come out
    await agent.ack(first)
    # THEN the job counts once, as printed, and the numbers add up
    counts = (await venue.ops("GET", "/v1/reconcile?deadline_s=0"))["counts"]
    assert (counts["accepted"], counts["printed"], counts["canceled"]) == (1, 1, 0)
    assert counts["unaccounted"] == 0
