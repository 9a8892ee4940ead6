"""The runbook drill (docs/runbook.md): each situation of its two checklists is
created through the API, with agents played over HTTP, and found and resolved
only with `badgeline` commands run as an operator would.

"A queue stalls": skew, a stuck head, a zombie printer.
"A printer drops mid-rush": a dead printer, walked through all six steps.
And the duplicates check."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.helpers import findings, wait_for
from tests.ops.conftest import MakeVenue
from tests.ops.venue import CliResult, PlayedAgent, Venue

STALL = "0.5"  # the runbook's `--stall-after 30`, shortened for a test


async def until(venue: Venue, args: list[str], ok: Callable[[CliResult], bool],
                timeout_s: float = 20) -> CliResult:  # fmt: skip
    """Run a command until its output shows what the operator waits for."""
    last: list[CliResult] = []

    async def attempt() -> bool:
        last[:] = [await venue.cli(*args)]
        return ok(last[0])

    try:
        await wait_for(attempt, timeout_s=timeout_s, interval_s=0.1)
    except AssertionError:
        raise AssertionError(f"badgeline {' '.join(args)} never showed it:\n{last[0].out}"
                             f"{last[0].err}") from None  # fmt: skip
    return last[0]


def fleet(venue: Venue, *printing: str) -> dict[str, PlayedAgent]:
    return {p: venue.agent(p).come_alive(printing=p in printing)
            for p in ("printer-a", "printer-b", "printer-c")}  # fmt: skip


async def wait_printed(venue: Venue, job_ids: list[str]) -> list[dict[str, Any]]:
    async def all_printed() -> list[dict[str, Any]] | None:
        jobs = [await venue.job(j) for j in job_ids]
        return jobs if all(j["state"] == "printed" for j in jobs) else None

    jobs: list[dict[str, Any]] = await wait_for(all_printed, timeout_s=20)
    return jobs


# --------------------------------------------------------------------------- a queue stalls


async def test_drill_skew_found_with_queues_and_fixed_with_rebalance(venue: Venue) -> None:
    # GIVEN three healthy printers whose agents are busy, and every kiosk picked printer-a
    fleet(venue)
    await wait_for(lambda: _all_healthy(venue))
    ids = await venue.submit("printer-a", 9)
    keys = {j: (await venue.job(j))["idempotency_key"] for j in ids}

    # Step 1: confirm the symptom class: one queue far above its peers is skew
    queues = await venue.cli_ok("queues")
    assert "SKEWED" in queues.line("printer-a") and "ok" in queues.line("printer-b")
    # Step 2: peek the head: the first job accepted, at its normal priority
    head = (await venue.cli_ok("peek", "printer-a")).line("0").split()
    assert head[1] == ids[0] and head[3] == "100"
    # Step 3: the printer is alive (fresh heartbeats, not a zombie)
    printers = await venue.cli_ok("printers")
    assert printers.line("printer-a").split()[1] == "healthy"
    assert printers.line("printer-a").endswith("ok")
    # Step 4: rebalance, don't flush
    moved = await venue.cli_ok("rebalance")
    assert "moved 6 job(s)" in moved.out

    # Step 5: validate: depths even, no flags, every job kept its id and key
    after = (await venue.cli_ok("queues", "--json")).json()
    assert {q["printer_id"]: (q["queue_depth"], q["flags"]) for q in after["items"]} == {
        p: (3, []) for p in ("printer-a", "printer-b", "printer-c")}  # fmt: skip
    for job_id, key in keys.items():
        job = await venue.job(job_id)
        assert job["state"] == "queued" and job["idempotency_key"] == key
    assert (await venue.cli_ok("peek", "printer-a")).line("0").split()[1] == ids[0]


async def test_drill_stuck_head_behind_a_forgotten_pause_is_resumed(venue: Venue) -> None:
    # GIVEN printer-a printing normally, then paused and forgotten, with badges waiting
    fleet(venue, "printer-a")
    await venue.ops("POST", "/v1/printers/printer-a/pause", {})
    ids = await venue.submit("printer-a", 3)

    # Step 1 and 3: the queue is stalled, and the printer is paused, not dead
    await until(venue, ["queues", "--stall-after", STALL],
                lambda r: "STALLED" in r.line("printer-a"))  # fmt: skip
    printer = (await venue.cli_ok("printers", "--stall-after", STALL)).line("printer-a").split()
    assert printer[1:3] == ["healthy", "yes"] and printer[-1] == "stalled"
    # Step 2: the head is the oldest badge, waiting, never tried
    head = (await venue.cli_ok("peek", "printer-a")).line("0").split()
    assert head[1] == ids[0] and head[4] == "0"
    # resolve: resume it
    await venue.cli_ok("resume", "printer-a")

    # Step 5: the head moves: every badge prints on printer-a, the queue empties
    jobs = await wait_printed(venue, ids)
    assert all(j["prints"] == 1 and j["printer_id"] == "printer-a" for j in jobs)
    queues = (await venue.cli_ok("queues", "--json")).json()["items"]
    assert [q["queue_depth"] for q in queues if q["printer_id"] == "printer-a"] == [0]


async def test_drill_zombie_printer_is_drained_to_a_live_one(venue: Venue) -> None:
    # GIVEN printer-a heartbeating but never taking work (a zombie) and printer-b printing
    fleet(venue, "printer-b")
    ids = await venue.submit("printer-a", 4)

    # Step 3: liveness: fresh heartbeats, a head that does not move
    printers = await until(venue, ["printers", "--stall-after", STALL],
                           lambda r: "ZOMBIE" in r.line("printer-a"))  # fmt: skip
    assert printers.line("printer-a").split()[1] == "healthy"
    # hand it to failover rather than clearing the queue
    drained = await venue.cli_ok("drain", "printer-a", "--to", "printer-b")
    assert drained.line("drain-printer-a").split()[3] == "4"

    # THEN printer-b printed every badge once, printer-a is empty and paused
    jobs = await wait_printed(venue, ids)
    assert all(j["prints"] == 1 and j["printer_id"] == "printer-b" for j in jobs)
    queue = (await venue.cli_ok("queues", "--json")).json()["items"][0]
    assert (queue["printer_id"], queue["queue_depth"], queue["paused"]) == ("printer-a", 0, True)
    decisions = await venue.cli_ok("failovers", "--printer", "printer-a")
    assert "printer-a queue now: 0 job(s)" in decisions.out


# --------------------------------------------------------------------------- a printer drops


async def test_drill_dead_printer_walked_through_the_failover_checklist(
    make_venue: MakeVenue,
) -> None:
    venue = await make_venue(high_water_mark=4, spill_named_targets=False)
    agents = fleet(venue)
    a, b, c = agents["printer-a"], agents["printer-b"], agents["printer-c"]
    # GIVEN printer-c full, so a kiosk's badge for it was shed to the dead letters
    ids = await venue.submit("printer-c", 4)
    (shed,) = await venue.submit("printer-c", status=503)
    # AND printer-a printing one badge with two waiting when it jams
    ids += await venue.submit("printer-a")
    (inflight,) = await a.lease()
    await a.start(inflight)
    ids += await venue.submit("printer-a", 2)
    assert await a.heartbeat(jammed=True) == "dead"
    ids += await venue.submit("printer-b")

    # Step 1: confirm the printer is actually dead, and why
    printers = await until(venue, ["printers"], lambda r: " dead " in r.line("printer-a"))
    assert "jammed" in printers.line("printer-a")
    # Step 2: the drain executed: a decision moved its two waiting jobs, its queue is empty
    decisions = await until(venue, ["failovers", "--printer", "printer-a"],
                            lambda r: "reprinted" in r.out)  # fmt: skip
    assert decisions.line("fo-printer-a-1").split()[3:5] == ["2", "0"]
    assert "printer-a queue now: 0 job(s)" in decisions.out
    # Step 3: no duplicates; the unconfirmed badge is a flagged possible duplicate
    report = (await venue.cli_ok("reconcile", "--json")).json()
    assert findings(report, "printed_more_than_once") == []
    assert [j["job_id"] for j in findings(report, "possible_duplicates")] == [inflight["job_id"]]
    # Step 4: contain the target's load: printer-c has caught up, spread b's backlog to it
    c.printing.set()
    await until(venue, ["queues", "--json"], lambda r: _depth(r, "printer-c") == 0)
    assert _depth(await venue.cli_ok("queues", "--json"), "printer-b") == 4
    assert "moved 2 job(s)" in (await venue.cli_ok("rebalance")).out
    # Step 5: re-drive the straggler through the dedupe gate
    redriven = await venue.cli_ok("dlq", "redrive")
    assert redriven.line(shed).split()[1] == "queued"
    # Step 6: validate: printer-b catches up, printer-a comes back after three good probes
    b.printing.set()
    await a.heartbeat(jammed=False)
    await until(venue, ["printers"], lambda r: " healthy " in r.line("printer-a"))
    clean = await until(venue, ["reconcile", "--check", "--deadline", "0"], lambda r: r.code == 0)
    assert "accepted 9  printed 9" in clean.out and "unaccounted 0" in clean.out

    # THEN every badge printed exactly once, the unconfirmed one on a live printer
    jobs = await wait_printed(venue, [*ids, shed])
    assert all(j["prints"] == 1 for j in jobs)
    rescued = await venue.job(inflight["job_id"])
    assert rescued["possible_duplicate"] and rescued["printer_id"] in ("printer-b", "printer-c")


async def test_drill_duplicate_print_is_found_by_reconcile(venue: Venue) -> None:
    # GIVEN an agent that lost power after printing, so the badge was sent
    # again, and both prints came out and were reported
    agent = venue.agent("printer-a").come_alive()
    (job_id,) = await venue.submit("printer-a")
    first = (await agent.lease())[0]
    await agent.start(first)
    await agent.ack(first, "uncertain", error="power lost")
    second = (await agent.lease())[0]
    await agent.start(second)
    await agent.ack(second)
    await agent.ack(first)

    # WHEN the operator runs the duplicates check
    check = await venue.cli("reconcile", "--check")
    # THEN it fails, naming the job and its two prints
    assert check.code == 1
    twice = check.block("printed more than once").splitlines()
    row = twice[2].split()
    assert len(twice) == 3 and row[0] == job_id and row[2:5] == ["printed", "printer-a", "2"]
    # AND the job's history says which leases printed it, for the desk to
    # retrieve the extra badge
    history = await venue.cli_ok("job", job_id)
    assert first["lease_id"] in history.out and second["lease_id"] in history.out
    assert "another print reported" in history.out


async def _all_healthy(venue: Venue) -> bool:
    printers = (await venue.ops("GET", "/v1/printers"))["items"]
    return len(printers) == 3 and all(p["state"] == "healthy" for p in printers)


def _depth(result: CliResult, printer_id: str) -> int:
    queues = result.json()["items"]
    return int(next(q["queue_depth"] for q in queues if q["printer_id"] == printer_id))
