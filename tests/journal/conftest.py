"""Fixtures that open real journal files in tmp_path and always close them."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from badgeline.agent.journal import Journal, JournalSettings

from .helpers import ManualClock

OpenJournal = Callable[..., Awaitable[Journal]]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def journal_path(tmp_path: Path) -> Path:
    return tmp_path / "agent" / "journal.db"


@pytest.fixture
async def open_journal(journal_path: Path, clock: ManualClock) -> AsyncIterator[OpenJournal]:
    opened: list[Journal] = []

    async def open_one(**settings: Any) -> Journal:
        journal = await Journal.open(JournalSettings(path=journal_path, **settings), clock=clock)
        opened.append(journal)
        return journal

    yield open_one
    for journal in opened:
        await journal.close()


@pytest.fixture
async def journal(open_journal: OpenJournal) -> Journal:
    return await open_journal()
