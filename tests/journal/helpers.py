"""Shared test helpers: a clock the tests move by hand, and job set-ups."""

from __future__ import annotations

import os
import random
import sqlite3
from pathlib import Path

import badgeline
from badgeline.agent.journal import Journal, JournalEntry

PAYLOAD = {
    "attendee_id": "att-0001",
    "badge_pdf_ref": "https://venue.example/badges/att-0001.pdf",
    "printer_target": "printer-01",
    "priority": 100,
    "idempotency_key": "kiosk-3:att-0001",
    "attempts": 1,
}
FENCE = 7


class ManualClock:
    """Wall-clock stand-in: time moves only when a test says so."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


# Each set-up is the sequence of journal calls that reaches a state, so a test
# can start from any point of the state machine.
SETUPS: dict[str, tuple[str, ...]] = {
    "leased": (),
    "granted": ("grant",),
    "printed": ("grant", "printed"),
    "failed": ("grant", "failed"),
    "uncertain": ("grant", "uncertain"),
    "dropped": ("dropped",),
    "acked-printed": ("grant", "printed", "acked"),
    "acked-failed": ("grant", "failed", "acked"),
    "acked-uncertain": ("grant", "uncertain", "acked"),
}


async def apply_step(journal: Journal, job_id: str, lease_id: str, step: str) -> JournalEntry:
    if step == "grant":
        return await journal.record_grant(job_id, lease_id, FENCE)
    if step == "printed":
        return await journal.record_printed(job_id, lease_id)
    if step == "failed":
        return await journal.record_failed(job_id, lease_id, "paper out")
    if step == "uncertain":
        return await journal.record_uncertain(job_id, lease_id, "link lost mid-send")
    if step == "dropped":
        return await journal.record_dropped(job_id, lease_id, "lease_revoked")
    if step == "acked":
        return await journal.mark_acked(job_id, lease_id)
    raise ValueError(step)


async def job_in_state(
    journal: Journal, setup: str, job_id: str = "job-1", lease_id: str = "lease-1"
) -> JournalEntry:
    entry = await journal.record_lease(job_id, lease_id, PAYLOAD)
    for step in SETUPS[setup]:
        entry = await apply_step(journal, job_id, lease_id, step)
    return entry


def badgeline_env() -> dict[str, str]:
    """Environment for a child Python that must import this checkout of badgeline."""
    source_root = str(Path(badgeline.__file__).resolve().parents[1])
    inherited = os.environ.get("PYTHONPATH")
    path = source_root if not inherited else source_root + os.pathsep + inherited
    return {**os.environ, "PYTHONPATH": path}


def tear_index_page(path: Path, index: str, seed: int = 7) -> None:
    """Overwrite the root page of one index with noise, as a power cut mid-write can.

    The table's own pages stay readable, as they mostly do on a torn SD card.
    """
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the page must be in the file itself
        page_size = db.execute("PRAGMA page_size").fetchone()[0]
        query = "SELECT rootpage FROM sqlite_master WHERE name = ?"
        (root,) = db.execute(query, (index,)).fetchone()
    with path.open("r+b") as file:
        file.seek((root - 1) * page_size)
        file.write(random.Random(seed).randbytes(page_size))
