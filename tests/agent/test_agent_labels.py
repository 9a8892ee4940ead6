"""Label printers (the emulator speaking ZPL or Brother QL raster) under a real agent, in
process: a Zebra's next label waits in its buffer while one prints and each comes out
once; the tech's test print comes out on a Zebra's and a Brother's label; the agent's
/status, the coordinator's printer list and the dashboard's snapshot say what the
printer speaks and how its badges are confirmed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp
import pytest
from PIL import Image

from badgeline.emulator import PrinterEmulator
from badgeline.emulator.media import Media
from tests.agent.conftest import Kiosk, LiveCoordinator, agent_settings
from tests.conftest import OPERATOR_TOKEN, auth
from tests.helpers import wait_for

# Room for a few labels in the printer's receive buffer.
BIG_BUFFER = 1024 * 1024
ZEBRA = {"language": "zpl", "model": "ZD421"}
BROTHER = {"language": "brother_ql", "media": "62x100"}
DIE_CUT_62X100 = Media(300, 696, 1109)


def one_printing_one_waiting(emulator: PrinterEmulator) -> bool:
    status = emulator.status()
    return bool(status["printing"]) and status["queued"] >= 1


async def all_printed(kiosk: Kiosk, job_ids: list[str]) -> bool:
    return all([await kiosk.state(job_id) == "printed" for job_id in job_ids])


def label_settings(
    coordinator: LiveCoordinator, emulator: PrinterEmulator, state: Path, **printer: str
) -> Any:
    connection = {"kind": "emulator", "host": "127.0.0.1", "port": emulator.port,
                  "timeout_s": 0.5, **printer}  # fmt: skip
    return agent_settings("printer-a", coordinator, None, state, printer=connection)


async def ready(agent: Any) -> bool:
    return bool(agent.watch.ready)


async def test_a_zebra_gets_the_next_label_while_one_prints_and_each_comes_out_once(
    coordinator: LiveCoordinator, kiosk: Kiosk, start_emulator: Any, run_agent: Any,
    badge_ref: str, tmp_path: Path,
) -> None:  # fmt: skip
    # GIVEN a Zebra that takes a while per label, and its agent (default settings:
    # its own word, host_status, and a pipeline two deep)
    emulator = await start_emulator(language="zpl", model="ZD421", ms_per_badge=400,
                                    buffer_bytes=BIG_BUFFER)  # fmt: skip
    await run_agent(label_settings(coordinator, emulator, tmp_path / "a", **ZEBRA))
    # WHEN four badges are submitted
    job_ids = [await kiosk.submit(badge_ref, "printer-a") for _ in range(4)]
    # THEN at some point a label waits in the Zebra's buffer while another prints
    await emulator.wait_until(one_printing_one_waiting, timeout=15)
    # AND each comes out once, in order, read back by its footer, and is confirmed
    await emulator.wait_until(lambda e: len(e.printed) >= 4, timeout=15)
    await wait_for(lambda: all_printed(kiosk, job_ids))
    assert [badge.job_id for badge in emulator.printed] == job_ids


@pytest.mark.parametrize(
    ("emulated", "printer", "label"),
    [
        ({"language": "zpl", "model": "ZD421"}, ZEBRA, (812, 609)),
        ({"language": "brother-ql", "media": DIE_CUT_62X100}, BROTHER, (696, 1109)),
    ],
    ids=["zebra", "brother"],
)
async def test_a_test_print_comes_out_on_the_label_printer_s_own_label(
    coordinator: LiveCoordinator, start_emulator: Any, run_agent: Any, tmp_path: Path,
    emulated: dict[str, Any], printer: dict[str, str], label: tuple[int, int],
) -> None:  # fmt: skip
    # GIVEN a label printer's agent, ready
    emulator = await start_emulator(**emulated)
    agent = await run_agent(label_settings(coordinator, emulator, tmp_path / "a", **printer))
    await wait_for(lambda: ready(agent))
    # WHEN a tech on the Pi asks for a test print
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"http://127.0.0.1:{agent.status_port}/test-print") as response,
    ):
        answer = await response.json()
        assert response.status == 200, answer
    # THEN one label came out, at the label's dots, with no job behind it (a Zebra's
    # footer is its own text field, read back; a Brother's is drawn into the picture)
    assert answer["printed"] is True and answer["ready"] is True
    await emulator.wait_until(lambda e: len(e.printed) == 1, timeout=10)
    (test_badge,) = emulator.printed
    assert test_badge.job_id is None and test_badge.png is not None
    with Image.open(test_badge.png) as png:
        assert png.size == label
    if printer["language"] == "zpl":
        assert "test print printer-a" in test_badge.text


async def test_status_the_printer_list_and_the_dashboard_say_a_zebra_speaks_zpl(
    coordinator: LiveCoordinator, start_emulator: Any, run_agent: Any, tmp_path: Path
) -> None:
    # GIVEN a Zebra's agent, ready and heard by the coordinator
    emulator = await start_emulator(language="zpl", model="ZD421")
    agent = await run_agent(label_settings(coordinator, emulator, tmp_path / "a", **ZEBRA))
    await wait_for(lambda: ready(agent))
    async with aiohttp.ClientSession() as session:
        # WHEN the tech asks the agent, and an operator the coordinator and the dashboard
        async with session.get(f"http://127.0.0.1:{agent.status_port}/status") as response:
            status = await response.json()

        async def listed(path: str, key: str) -> Any:
            async with session.get(coordinator.url + path, headers=auth(OPERATOR_TOKEN)) as got:
                printers = (await got.json())[key]
            view = next((p for p in printers if p["printer_id"] == "printer-a"), None)
            return view if view and view.get("confirmation") else None

        in_list = await wait_for(lambda: listed("/v1/printers", "items"))  # a page
        on_dashboard = await wait_for(lambda: listed("/dashboard/snapshot", "printers"))
    # THEN each names the language, and how its badges are confirmed
    printer = status["printer"]
    assert printer["language"] == "zpl" and printer["confirmation"] == "host_status"
    assert printer["model"] == "ZD421 203 dpi 812x609 dots"
    for view in (in_list, on_dashboard):
        assert view["language"] == "zpl" and view["confirmation"] == "host_status"
