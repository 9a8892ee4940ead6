"""Slow is not silent: badge printers take 0.5 s (receipt) to 30 s (card) a badge.

A printer's receive buffer (the emulator's default: 16 KB) holds less than a
badge, so while it prints, TCP holds the agent's next bytes, and its status
queries wait behind them. Counted at the emulators: every badge exactly once,
never `uncertain`, never flagged, never retried, at every speed. A printer
that really stops mid-badge (frozen: a hung printer, a cable pulled) still
ends `uncertain` within its stall timeout, and its badge prints once elsewhere.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

from badgeline.agent.journal import LocalJobState
from badgeline.agent.service import Agent
from badgeline.emulator import Fault, PrinterEmulator
from badgeline.emulator.printhead import DEFAULT_BUFFER_BYTES
from badgeline.protocol.states import AckResult
from tests.agent.conftest import Kiosk, LiveCoordinator, agent_settings
from tests.helpers import wait_for

# Seconds a badge, and badges each printer gets: two at least, so that the second
# waits in the agent's send queue behind the first (pipelining, depth 2).
SPEEDS = {0.5: 4, 2.0: 3, 5.0: 3, 10.0: 2, 30.0: 2}


async def journal_outcomes(agent: Agent, job_ids: list[str]) -> list[AckResult | None]:
    outcomes = []
    for job_id in job_ids:
        outcomes += [entry.outcome for entry in await agent.journal.history(job_id)]
    return outcomes


async def test_at_every_print_speed_each_badge_prints_once_and_is_never_in_doubt(
    coordinator: LiveCoordinator, kiosk: Kiosk, start_emulator: Any, run_agent: Any,
    badge_ref: str, tmp_path: Path,
) -> None:  # fmt: skip
    # GIVEN one printer per speed, each with the default receive buffer, and its agent
    printers: dict[str, tuple[PrinterEmulator, Agent, int]] = {}
    for number, (seconds, badges) in enumerate(SPEEDS.items()):
        emulator = await start_emulator(ms_per_badge=int(seconds * 1000))
        assert emulator.status()["buffer_bytes"] == DEFAULT_BUFFER_BYTES
        printer_id = f"printer-{'abcde'[number]}"
        # The printer's own timeouts as shipped (the other tests shorten them).
        printer = {"kind": "emulator", "host": "127.0.0.1", "port": emulator.port}
        settings = agent_settings(
            printer_id, coordinator, emulator, tmp_path / printer_id, printer=printer
        )
        agent = await run_agent(settings)
        printers[printer_id] = (emulator, agent, badges)
    # WHEN each gets its badges, all at once
    jobs = {
        printer_id: [await kiosk.submit(badge_ref, printer_id) for _ in range(badges)]
        for printer_id, (_, _, badges) in printers.items()
    }
    # THEN every badge comes out exactly once, on its own printer, in order
    slowest_s = max(seconds * badges for seconds, badges in SPEEDS.items())

    async def all_printed() -> bool:
        return all([await kiosk.state(job_id) == "printed"
                    for job_ids in jobs.values() for job_id in job_ids])  # fmt: skip

    await wait_for(all_printed, timeout_s=slowest_s + 30)
    for printer_id, (emulator, agent, _) in printers.items():
        assert [badge.job_id for badge in emulator.printed] == jobs[printer_id], printer_id
        # AND no badge was ever in doubt: no uncertain result, no flag, no retry
        assert await journal_outcomes(agent, jobs[printer_id]) == (
            [AckResult.PRINTED] * len(jobs[printer_id])
        ), printer_id
        for job_id in jobs[printer_id]:
            job = await kiosk.job(job_id)
            assert (job["possible_duplicate"], job["attempts"], job["prints"]) == (False, 0, 1)
            assert [entry["to"] for entry in job["history"]] == [
                "queued",
                "leased",
                "printing",
                "printed",
            ], job["history"]
        assert emulator.status()["discarded"] == 0
    # AND no printer was ever reported unreachable (slow is not gone): none failed over
    printers_view = await kiosk.operator_get("/v1/printers")
    states = {p["printer_id"]: p["state"] for p in printers_view["items"]}
    assert all(states[printer_id] == "healthy" for printer_id in printers), states
    assert (await kiosk.operator_get("/v1/failovers"))["items"] == []


async def test_a_printer_that_freezes_mid_badge_ends_uncertain_and_the_badge_prints_elsewhere(
    coordinator: LiveCoordinator, kiosk: Kiosk, start_emulator: Any, run_agent: Any,
    badge_ref: str, tmp_path: Path,
) -> None:  # fmt: skip
    # GIVEN a card printer (10 s a badge) whose agent calls it gone after 2 s of no progress,
    # and a healthy peer in the same pool
    slow = await start_emulator(ms_per_badge=10_000)
    peer = await start_emulator()
    stall_s, timeout_s = 2.0, 0.5
    printer = {"kind": "emulator", "host": "127.0.0.1", "port": slow.port,
               "timeout_s": timeout_s, "stall_timeout_s": stall_s}  # fmt: skip
    frozen_agent = await run_agent(
        agent_settings(
            "printer-a", coordinator, slow, tmp_path / "a", printer=printer, labels=["hall"]
        )
    )
    await run_agent(agent_settings("printer-b", coordinator, peer, tmp_path / "b",
                                   labels=["hall"]))  # fmt: skip
    job_id = await kiosk.submit(badge_ref, "printer-a")
    await slow.wait_until(lambda e: e.status()["printing"], timeout=10)
    # WHEN it hangs mid-badge: it reads nothing more, prints nothing, answers nothing
    slow.fault = Fault.FROZEN
    frozen_at = asyncio.get_running_loop().time()

    async def reported_uncertain() -> bool:
        history = await frozen_agent.journal.history(job_id)
        return bool(history) and history[0].state in (LocalJobState.UNCERTAIN,
                                                      LocalJobState.ACKED) and (
            history[0].outcome is AckResult.UNCERTAIN)  # fmt: skip

    # THEN the agent reports the badge uncertain within its stall timeout (plus the
    # status timeout, and slack for a loaded machine): silence while holding our
    # bytes is busy only while the printer takes some
    await wait_for(reported_uncertain, timeout_s=stall_s + timeout_s + 10)
    assert asyncio.get_running_loop().time() - frozen_at >= stall_s
    # AND the coordinator re-dispatches it, flagged: it prints once, on the peer
    await wait_for(lambda: _printed_on(peer, job_id), timeout_s=30)
    job = await kiosk.job(job_id)
    assert job["possible_duplicate"] is True and job["printer_id"] == "printer-b"
    assert Counter(badge.job_id for badge in slow.printed + peer.printed) == {job_id: 1}


async def _printed_on(emulator: PrinterEmulator, job_id: str) -> bool:
    return any(badge.job_id == job_id for badge in emulator.printed)
