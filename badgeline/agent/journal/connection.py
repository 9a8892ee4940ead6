"""Opening the journal file durably, and rebuilding it when it is unreadable.

SD cards corrupt when the power drops during a write. A journal that cannot be
read must not keep the agent from starting, so it is moved aside (kept for a
post-mortem) and a fresh one is created, carrying over the unconfirmed grants and
results that can still be read from it (salvage.py). That happens only for errors that say
the file itself is bad (not a database, corrupt pages): a locked journal or a
full disk is a passing condition, and throwing away a good journal would lose
the grants and prints the coordinator still has to hear about.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import aiosqlite

from badgeline.agent.journal.errors import (
    JournalCorruptError,
    translate,
)
from badgeline.agent.journal.salvage import carry_over, read_owed
from badgeline.agent.journal.schema import apply_migrations, load_migrations
from badgeline.agent.journal.settings import JournalSettings
from badgeline.private_files import create_private_file, make_private, private_dir
from badgeline.sqlite_files import SIDE_FILE_SUFFIXES, move_aside

log = logging.getLogger("badgeline.agent.journal")


# SQLite keeps a WAL journal and its index next to the database; a moved-aside
# database must take them along, or a fresh file would replay a stale WAL.
def _companions(path: Path) -> list[Path]:
    return [path.with_name(path.name + suffix) for suffix in SIDE_FILE_SUFFIXES]


@dataclass(frozen=True)
class OpenedDatabase:
    db: aiosqlite.Connection
    schema_version: int
    moved_aside: Path | None


async def open_database(settings: JournalSettings, clock: Callable[[], float]) -> OpenedDatabase:
    """Open (or create) the journal; move an unreadable file aside and start afresh."""
    private_dir(settings.path.parent)
    # Created 0600 before SQLite opens it: its WAL and SHM take the file's mode, so
    # job payloads are never readable by other users (an older build's files are fixed).
    create_private_file(settings.path)
    make_private(*_companions(settings.path))
    try:
        db, version = await _open_checked(settings, clock)
        return OpenedDatabase(db, version, moved_aside=None)
    except JournalCorruptError as error:
        reason = str(error)
    moved = move_aside(settings.path, clock())
    log.error(
        "journal %s is unreadable (%s); moved it to %s and started a fresh journal",
        settings.path,
        reason,
        moved,
        extra={"journal_path": str(settings.path), "moved_to": str(moved)},
    )
    owed = await asyncio.to_thread(read_owed, moved)
    create_private_file(settings.path)
    db, version = await _open_checked(settings, clock)
    try:
        async with write_transaction(db):
            carried = await carry_over(db, owed, clock)
    except BaseException:
        await db.close()
        raise
    if carried:
        log.warning("carried %d unconfirmed grants and results over from %s", carried, moved)
    return OpenedDatabase(db, version, moved_aside=moved)


async def _open_checked(
    settings: JournalSettings, clock: Callable[[], float]
) -> tuple[aiosqlite.Connection, int]:
    """Connect, set the durability pragmas, check the pages, migrate; errors are JournalErrors."""
    try:
        db = await aiosqlite.connect(settings.path, isolation_level=None)
    except sqlite3.Error as error:
        raise translate(error) from error
    try:
        with sqlite_errors_translated():
            db.row_factory = sqlite3.Row
            await _configure(db, settings)
            await _quick_check(db)
        async with write_transaction(db):
            version = await apply_migrations(db, load_migrations(), clock)
    except BaseException:
        await db.close()
        raise
    return db, version


async def _configure(db: aiosqlite.Connection, settings: JournalSettings) -> None:
    # busy_timeout first: the statements below may wait for another connection's lock.
    await db.execute(f"PRAGMA busy_timeout = {int(settings.busy_timeout_ms)}")
    rows = list(await db.execute_fetchall("PRAGMA journal_mode = WAL"))
    mode = str(rows[0][0]).lower()
    if mode != "wal":
        # Some filesystems cannot hold WAL's shared-memory index; the rollback
        # journal with synchronous=FULL is slower but just as durable.
        log.warning("journal %s runs in %s mode, not WAL", settings.path, mode)
    # FULL: a commit is fsynced before it returns, so a journaled grant survives
    # a power cut (NORMAL in WAL mode may lose the last commits).
    await db.execute("PRAGMA synchronous = FULL")
    await db.execute(f"PRAGMA wal_autocheckpoint = {int(settings.wal_autocheckpoint_pages)}")
    await db.execute(f"PRAGMA journal_size_limit = {int(settings.wal_size_limit_bytes)}")
    if settings.max_size_bytes is not None:
        page_size = next(iter(await db.execute_fetchall("PRAGMA page_size")))[0]
        await db.execute(f"PRAGMA max_page_count = {settings.max_size_bytes // int(page_size)}")


async def _quick_check(db: aiosqlite.Connection) -> None:
    # The journal is small, so checking every page at start-up costs milliseconds
    # and finds a torn page now rather than in the middle of a print.
    rows = [str(row[0]) for row in await db.execute_fetchall("PRAGMA quick_check")]
    if rows != ["ok"]:
        raise JournalCorruptError("quick_check: " + "; ".join(rows[:5]))


@contextlib.contextmanager
def sqlite_errors_translated() -> Iterator[None]:
    try:
        yield
    except sqlite3.Error as error:
        raise translate(error) from error


@asynccontextmanager
async def write_transaction(db: aiosqlite.Connection) -> AsyncIterator[aiosqlite.Connection]:
    """BEGIN IMMEDIATE … COMMIT, rolled back on any error, SQLite errors translated.

    IMMEDIATE takes the write lock up front, so a busy journal fails at BEGIN
    (after busy_timeout) instead of half-way through a read-then-write.
    """
    with sqlite_errors_translated():
        await db.execute("BEGIN IMMEDIATE")
    try:
        with sqlite_errors_translated():
            yield db
            await db.execute("COMMIT")
    except BaseException:
        await _rollback_quietly(db)
        raise


async def _rollback_quietly(db: aiosqlite.Connection) -> None:
    # SQLite may already have rolled back (e.g. after SQLITE_FULL), or COMMIT
    # may have succeeded before a cancellation reached us: either way the
    # connection is left outside a transaction, which is all we need.
    with contextlib.suppress(sqlite3.Error, ValueError):
        await db.execute("ROLLBACK")
