"""A journaled lease that cannot be prepared is resolved at start-up, never replayed into a crash.

A lease an agent journaled before it stopped is prepared again at the next start.
If what the journal holds cannot be used (a badge reference no file can have, a
payload a torn page turned into garbage), that job fails, with its reason, and
the agent carries on: before, every start died on it within a second, and only
deleting the journal by hand brought the printer back. Each agent here is its
own `badgeline agent` process, as systemd runs it, started three times.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from badgeline.agent.config import JOURNAL_FILE_NAME
from badgeline.emulator import PrinterEmulator
from tests.agent.conftest import Kiosk, LiveCoordinator, agent_settings
from tests.agent.journal_prep import crash_after_lease
from tests.helpers import wait_for

STARTS = 3


def poison_payload(journal: Path, job_id: str, payload: str) -> None:
    """Overwrite what the journal remembers of the job, as damage (or an old bug) would."""
    with contextlib.closing(sqlite3.connect(journal)) as db, db:
        db.execute("UPDATE jobs SET payload = ? WHERE job_id = ?", (payload, job_id))


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        ('{"badge_pdf_ref": "file:///badges/x\\u0000.pdf"}', "bad_reference"),
        ('{"badge_pdf_ref": 42, "idempotency_key": []}', "bad_reference"),
        ("not JSON at all \x00\xff", "bad_reference"),
        ('["a list, not an object"]', "bad_reference"),
    ],
)
async def test_an_unusable_journaled_lease_fails_its_job_and_every_start_carries_on(
    coordinator: LiveCoordinator, kiosk: Kiosk, start_emulator: Any, start_agent: Any,
    badge_ref: str, tmp_path: Path, payload: str, reason: str,
) -> None:  # fmt: skip
    # GIVEN a lease journaled before the agent stopped, its payload unusable
    emulator: PrinterEmulator = await start_emulator()
    settings = agent_settings("printer-a", coordinator, emulator, tmp_path / "a")
    poisoned = await kiosk.submit(badge_ref, "printer-a")
    await crash_after_lease(settings)
    poison_payload(settings.state_dir / JOURNAL_FILE_NAME, poisoned, payload)
    # AND a good badge queued behind it
    good = await kiosk.submit(badge_ref, "printer-a")
    # WHEN the agent starts, and is restarted twice more
    for _ in range(STARTS):
        agent = await start_agent(settings, emulator)  # waits until it is healthy
        # THEN it stays up: the poisoned job fails with its reason, the good one prints
        await wait_for(lambda: _state_is(kiosk, poisoned, "failed"), timeout_s=20)
        await wait_for(lambda: _state_is(kiosk, good, "printed"), timeout_s=20)
        assert agent.alive() and await agent.healthy()
        await agent.process.terminate()
    job = await kiosk.job(poisoned)
    assert (job["failure_reason"], job["failed_for_good"]) == (reason, True)
    assert [badge.job_id for badge in emulator.printed] == [good]


async def _state_is(kiosk: Kiosk, job_id: str, state: str) -> bool:
    return await kiosk.state(job_id) == state
