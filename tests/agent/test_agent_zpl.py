"""A Zebra (the emulator speaking ZPL) under a real agent, in process: the next label waits
in the printer's buffer while one prints, and the labels in flight are confirmed together
by a `~HS` showing none left, each on paper once, in order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from badgeline.emulator import PrinterEmulator
from tests.agent.conftest import Kiosk, LiveCoordinator, agent_settings
from tests.helpers import wait_for

# Room for a few labels in the printer's receive buffer.
BIG_BUFFER = 1024 * 1024


def one_printing_one_waiting(emulator: PrinterEmulator) -> bool:
    status = emulator.status()
    return bool(status["printing"]) and status["queued"] >= 1


async def all_printed(kiosk: Kiosk, job_ids: list[str]) -> bool:
    return all([await kiosk.state(job_id) == "printed" for job_id in job_ids])


def zebra_settings(coordinator: LiveCoordinator, emulator: PrinterEmulator, state: Path) -> Any:
    printer = {"kind": "emulator", "host": "127.0.0.1", "port": emulator.port,
               "timeout_s": 0.5, "language": "zpl", "model": "ZD421"}  # fmt: skip
    return agent_settings("printer-a", coordinator, None, state, printer=printer)


async def test_a_zebra_gets_the_next_label_while_one_prints_and_each_comes_out_once(
    coordinator: LiveCoordinator, kiosk: Kiosk, start_emulator: Any, run_agent: Any,
    badge_ref: str, tmp_path: Path,
) -> None:  # fmt: skip
    # GIVEN a Zebra that takes a while per label, and its agent (default settings:
    # its own word, host_status, and a pipeline two deep)
    emulator = await start_emulator(language="zpl", model="ZD421", ms_per_badge=400,
                                    buffer_bytes=BIG_BUFFER)  # fmt: skip
    await run_agent(zebra_settings(coordinator, emulator, tmp_path / "a"))
    # WHEN four badges are submitted
    job_ids = [await kiosk.submit(badge_ref, "printer-a") for _ in range(4)]
    # THEN at some point a label waits in the Zebra's buffer while another prints
    await emulator.wait_until(one_printing_one_waiting, timeout=15)
    # AND each comes out once, in order, read back by its footer, and is confirmed
    await emulator.wait_until(lambda e: len(e.printed) >= 4, timeout=15)
    await wait_for(lambda: all_printed(kiosk, job_ids))
    assert [badge.job_id for badge in emulator.printed] == job_ids
