"""The agent end to end: kiosk -> coordinator -> agent -> emulator, exactly once, in order."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from redis.asyncio import Redis

from badgeline.coordinator.store.keys import VenueKeys
from badgeline.emulator import Fault, PrinterEmulator
from tests.agent.conftest import Kiosk, LiveCoordinator, agent_settings
from tests.helpers import wait_for


def printed_job_ids(emulator: PrinterEmulator) -> list[str | None]:
    return [badge.job_id for badge in emulator.printed]


async def wait_printed(emulator: PrinterEmulator, count: int, timeout: float = 15.0) -> None:
    await emulator.wait_until(lambda e: len(e.printed) >= count, timeout=timeout)


async def all_in_state(kiosk: Kiosk, job_ids: list[str], state: str) -> bool:
    return all([await kiosk.state(job_id) == state for job_id in job_ids])


async def test_jobs_print_exactly_once_on_their_own_printer(
    coordinator: LiveCoordinator, kiosk: Kiosk, start_emulator: Any, run_agent: Any,
    badge_ref: str, tmp_path: Path,
) -> None:  # fmt: skip
    # GIVEN two printers, each with its agent
    emulators = {pid: await start_emulator() for pid in ("printer-a", "printer-b")}
    for pid, emulator in emulators.items():
        await run_agent(agent_settings(pid, coordinator, emulator, tmp_path / pid))
    # WHEN a kiosk submits three badges for each
    submitted = {pid: [await kiosk.submit(badge_ref, pid) for _ in range(3)] for pid in emulators}
    # THEN each badge comes out once, on its own printer, and each job ends printed
    for pid, emulator in emulators.items():
        await wait_printed(emulator, 3)
        assert Counter(printed_job_ids(emulator)) == Counter(submitted[pid])
    every_job = submitted["printer-a"] + submitted["printer-b"]
    await wait_for(lambda: all_in_state(kiosk, every_job, "printed"))
    for emulator in emulators.values():
        assert len(emulator.printed) == 3


async def test_badges_print_in_priority_order_then_arrival(
    coordinator: LiveCoordinator, kiosk: Kiosk, start_emulator: Any, run_agent: Any,
    badge_ref: str, tmp_path: Path,
) -> None:  # fmt: skip
    # GIVEN jobs queued for one printer before its agent starts
    priorities = [300, 100, 200, 100, 5, 300]
    job_ids = [await kiosk.submit(badge_ref, "printer-a", priority=p) for p in priorities]
    emulator = await start_emulator()
    # WHEN the agent starts
    await run_agent(agent_settings("printer-a", coordinator, emulator, tmp_path / "a"))
    # THEN it prints them lowest priority number first, FIFO within a priority
    await wait_printed(emulator, len(job_ids))
    expected = [
        job for _, _, job in sorted(zip(priorities, range(len(job_ids)), job_ids, strict=True))
    ]
    assert printed_job_ids(emulator) == expected


async def test_offline_printer_is_reported_and_its_jobs_wait_for_it(
    coordinator: LiveCoordinator, kiosk: Kiosk, start_emulator: Any, run_agent: Any,
    badge_ref: str, tmp_path: Path, redis: Redis,
) -> None:  # fmt: skip
    # GIVEN a printer that is switched off (it answers nothing) and its agent
    emulator = await start_emulator(fault=Fault.OFFLINE)
    agent = await run_agent(agent_settings("printer-a", coordinator, emulator, tmp_path / "a"))
    job_ids = [await kiosk.submit(badge_ref, "printer-a") for _ in range(2)]
    # THEN the heartbeat tells the coordinator it is unreachable
    printer_key = VenueKeys(coordinator.settings.venue).printer("printer-a")

    async def reported_unreachable() -> bool:
        health = await redis.hget(printer_key, "health")
        return health is not None and json.loads(health)["reachable"] is False

    await wait_for(reported_unreachable)
    # AND nothing was sent to it, failed or lost: the jobs are still waiting
    assert emulator.printed == [] and emulator.status()["discarded"] == 0
    assert (await agent.journal.counts())["granted"] == 0
    for job_id in job_ids:
        assert await kiosk.state(job_id) not in ("printed", "failed", "dead_lettered")
    # WHEN the printer comes back
    emulator.fault = Fault.NONE
    # THEN every job prints, once
    await wait_printed(emulator, len(job_ids))
    await wait_for(lambda: all_in_state(kiosk, job_ids, "printed"))
    assert Counter(printed_job_ids(emulator)) == Counter(job_ids)
