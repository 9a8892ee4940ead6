"""The chaos venue restarts a process that exits on its own, as the shipped
systemd units do, and says so; one a fault killed waits for the fault to clear."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.chaos.harness import venue as venue_module
from tests.chaos.harness.venue import ChaosVenue


async def test_a_process_that_exits_on_its_own_is_restarted_and_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(venue_module, "RESTART_AFTER_S", 0.1)
    venue = ChaosVenue(tmp_path, ("printer-a", "printer-b"), supervise=True)
    (tmp_path / "logs").mkdir()
    try:
        venue.start_emulator("printer-a")
        venue.start_emulator("printer-b")
        venue.start_supervisor()
        crashed = venue.processes["emulator-printer-b"].process
        assert crashed is not None

        # WHEN a fault kills one emulator and the other dies of itself
        venue.kill_by_fault("emulator-printer-a")
        crashed.kill()

        # THEN the one that died of itself comes back, and is reported
        async def restarted() -> bool:
            current = venue.processes["emulator-printer-b"]
            return current.process is not crashed and venue.running("emulator-printer-b")

        await venue.wait_for(restarted, "the crashed emulator to be restarted", 20)
        assert len(venue.unplanned_exits) == 1, venue.unplanned_exits
        assert venue.unplanned_exits[0].startswith("emulator-printer-b exited on its own")
        # AND the one the fault killed stayed down (the supervisor went past it)
        assert not venue.running("emulator-printer-a")
    finally:
        await venue.stop()
