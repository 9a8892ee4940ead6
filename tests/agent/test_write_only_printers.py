"""Printers that cannot talk back: many cheap network printers and print servers take
bytes and answer nothing, neither DLE EOT nor GS ( H. With `print_confirmation =
"sent"` their agent asks them nothing: badges print, each confirmed once the printer
took all of it (the weaker guarantee, shown per printer), health from the link."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp

from badgeline.protocol.states import CONFIRMATION_GUARANTEES, Confirmation
from tests.agent.conftest import Kiosk, LiveCoordinator, agent_settings
from tests.conftest import OPERATOR_TOKEN, auth
from tests.helpers import wait_for


async def _printer_view(kiosk: Kiosk, printer_id: str) -> dict[str, Any]:
    """The printer's row ({} until its agent's first heartbeat)."""
    view = await kiosk.operator_get("/v1/printers")
    return next((p for p in view["items"] if p["printer_id"] == printer_id), {})


async def test_a_write_only_printer_prints_each_badge_once_confirmed_as_sent(
    coordinator: LiveCoordinator, kiosk: Kiosk, start_emulator: Any, run_agent: Any,
    badge_ref: str, tmp_path: Path,
) -> None:  # fmt: skip
    # GIVEN a printer that answers nothing, and its agent told so
    printer = await start_emulator(write_only=True)
    agent = await run_agent(agent_settings("printer-a", coordinator, printer, tmp_path / "a",
                                           print_confirmation="sent"))  # fmt: skip
    # WHEN badges are sent to it
    job_ids = [await kiosk.submit(badge_ref, "printer-a") for _ in range(3)]
    # THEN each comes out once, in order, and is reported printed
    await printer.wait_until(lambda e: len(e.printed) == 3, timeout=20)

    async def all_printed() -> bool:
        return all([await kiosk.state(job_id) == "printed" for job_id in job_ids])

    await wait_for(all_printed)
    assert [badge.job_id for badge in printer.printed] == job_ids
    # AND it was never asked anything a write-only printer could print as garbage
    status = printer.status()
    assert (status["status_queries"], status["process_ids_dropped"]) == (0, 0)
    # AND it stays healthy, from its link, with the weaker guarantee stated per printer
    view = await _printer_view(kiosk, "printer-a")
    assert view["state"] == "healthy" and view["health"]["reachable"] is True
    assert view["confirmation"] == "sent"
    assert view["confirmation_guarantee"] == CONFIRMATION_GUARANTEES[Confirmation.SENT]
    metrics_url, operator = f"{coordinator.url}/metrics", auth(OPERATOR_TOKEN)
    async with (
        aiohttp.ClientSession() as session,
        session.get(metrics_url, headers=operator) as response,
    ):
        metrics = await response.text()
    assert 'badgeline_printer_confirmation{by="sent",printer="printer-a"} 1.0' in metrics
    assert agent.heartbeat is not None


async def test_a_write_only_printer_that_goes_away_is_reported_unreachable(
    coordinator: LiveCoordinator, kiosk: Kiosk, start_emulator: Any, run_agent: Any,
    tmp_path: Path,
) -> None:  # fmt: skip
    # GIVEN a write-only printer that is up
    printer = await start_emulator(write_only=True)
    await run_agent(agent_settings("printer-a", coordinator, printer, tmp_path / "a",
                                   print_confirmation="sent"))  # fmt: skip

    async def reachable_is(value: bool) -> bool:
        view = await _printer_view(kiosk, "printer-a")
        return bool(view.get("health")) and view["health"]["reachable"] is value

    await wait_for(lambda: reachable_is(True))
    # WHEN it is switched off (its port closes)
    await printer.stop()
    # THEN its health, from the link alone, says it is gone
    await wait_for(lambda: reachable_is(False), timeout_s=15)


async def test_without_the_setting_a_write_only_printer_is_found_unreachable(
    coordinator: LiveCoordinator, kiosk: Kiosk, start_emulator: Any, run_agent: Any,
    tmp_path: Path,
) -> None:  # fmt: skip
    # GIVEN a write-only printer and an agent left to its default ("auto")
    printer = await start_emulator(write_only=True)
    await run_agent(agent_settings("printer-a", coordinator, printer, tmp_path / "a"))

    # THEN the probe's silence makes it unreachable, and the detail says why
    async def unreachable() -> bool:
        view = await _printer_view(kiosk, "printer-a")
        return bool(view.get("health")) and view["health"]["reachable"] is False

    await wait_for(unreachable, timeout_s=15)
    view = await _printer_view(kiosk, "printer-a")
    assert "no reply to DLE EOT" in view["health"]["detail"]
