"""Schema migrations: numbered `.sql` files applied in order, recorded in `schema_version`."""

from __future__ import annotations

import importlib
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import aiosqlite

from badgeline.agent.journal.errors import JournalSchemaError

MIGRATIONS_PACKAGE = "badgeline.agent.journal.migrations"
_FILE_NAME = re.compile(r"^(?P<version>\d{4})_(?P<name>[a-z0-9_]+)\.sql$")

_CREATE_VERSION_TABLE = """
CREATE TABLE IF NOT EXISTS schema_version (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    applied_at REAL NOT NULL
)
"""


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str

    def statements(self) -> list[str]:
        """Split the file into statements; `complete_statement` knows about triggers and quotes."""
        statements: list[str] = []
        pending = ""
        for line in self.sql.splitlines(keepends=True):
            pending += line
            if sqlite3.complete_statement(pending):
                statements.append(pending.strip())
                pending = ""
        if pending.strip() and not _only_comments(pending):
            raise JournalSchemaError(f"migration {self.version:04d}_{self.name}: unterminated SQL")
        return statements


def _only_comments(text: str) -> bool:
    return all(not line.strip() or line.strip().startswith("--") for line in text.splitlines())


def load_migrations(package: str = MIGRATIONS_PACKAGE) -> list[Migration]:
    """Every migration shipped in `package`, checked to be numbered 1, 2, 3… without gaps."""
    migrations = []
    # The package's own folders, not importlib.resources: that module imports
    # tempfile, shutil, bz2 and lzma (0.8 MB of the agent's memory budget), and the
    # agent is always installed as files, never run from a zip.
    folders = importlib.import_module(package).__path__
    for entry in sorted(path for folder in folders for path in Path(folder).iterdir()):
        match = _FILE_NAME.match(entry.name)
        if match is None:
            continue
        migrations.append(
            Migration(int(match["version"]), match["name"], entry.read_text(encoding="utf-8"))
        )
    migrations.sort(key=lambda migration: migration.version)
    expected = list(range(1, len(migrations) + 1))
    if [migration.version for migration in migrations] != expected:
        found = [migration.version for migration in migrations]
        raise JournalSchemaError(f"migrations must be numbered {expected}, found {found}")
    return migrations


async def current_version(db: aiosqlite.Connection) -> int:
    rows = list(await db.execute_fetchall("SELECT MAX(version) FROM schema_version"))
    return int(rows[0][0] or 0)


async def apply_migrations(
    db: aiosqlite.Connection, migrations: list[Migration], clock: Callable[[], float]
) -> int:
    """Bring the schema up to date; the caller holds a write transaction.

    All pending migrations go in that one transaction, so a power cut leaves
    the journal at the old version or the new one, never half-way.
    """
    await db.execute(_CREATE_VERSION_TABLE)
    version = await current_version(db)
    latest = migrations[-1].version if migrations else 0
    if version > latest:
        # An older agent build on a journal written by a newer one: refuse
        # rather than guess, the file itself is fine.
        raise JournalSchemaError(f"journal schema {version} is newer than this agent's {latest}")
    for migration in migrations[version:]:
        for statement in migration.statements():
            await db.execute(statement)
        await db.execute(
            "INSERT INTO schema_version (version, name, applied_at) VALUES (?, ?, ?)",
            (migration.version, migration.name, clock()),
        )
    return max(version, latest)
