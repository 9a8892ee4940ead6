"""Carry what the coordinator is still owed out of a journal that was moved aside.

A journal fails its check when any page is torn, yet its rows are mostly still
readable. Starting on an empty journal would forget every grant and result not
yet confirmed: the coordinator holds those jobs `printing` and, while the
printer stays healthy, nothing else ever moves them (only an ack does). So the
rows that owe the coordinator a result are read back, as far as they can be,
and journaled again: results as they were, grants without a result as
`uncertain` (the badge may have printed). The outbox then reports them as
after any restart. Leases never granted are left behind: the coordinator takes
those back when their lease expires.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiosqlite

log = logging.getLogger("badgeline.agent.journal")

UNCERTAIN_AFTER_REBUILD = (
    "the journal was rebuilt after this grant and holds no print result:"
    " the badge may or may not have printed"
)
_OWED = ("granted", "printed", "failed", "uncertain")
# NOT INDEXED: the torn page may be an index's; the table's own pages are read.
_SELECT_OWED = (
    "SELECT job_id, lease_id, fence, payload, state, error, leased_at, granted_at, printed_at"
    " FROM jobs NOT INDEXED WHERE state IN ('granted', 'printed', 'failed', 'uncertain')"
)


def read_owed(path: Path) -> list[dict[str, Any]]:
    """The readable rows of `path` that owe the coordinator a result; [] if none can be read."""
    rows: list[dict[str, Any]] = []
    try:
        # Read-only: the moved-aside file is kept as it is, for a post-mortem.
        db = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True)
    except (sqlite3.Error, ValueError, OSError) as error:
        # Salvage is a bonus: it must never keep the agent from starting.
        log.warning("journal %s: nothing salvaged: %s", path, error)
        return rows
    try:
        db.row_factory = sqlite3.Row
        cursor = db.execute(_SELECT_OWED)
        while row := cursor.fetchone():  # one at a time: keep the rows before a bad page
            if _sane(row):
                rows.append(dict(row))
    except sqlite3.Error as error:
        log.warning("journal %s: read %d owed rows, then: %s", path, len(rows), error)
    finally:
        db.close()
    return rows


def _sane(row: sqlite3.Row) -> bool:
    """Only rows the outbox can send: a torn page can hand back any bytes."""
    ids_ok = all(isinstance(row[name], str) and 0 < len(row[name]) <= 80
                 for name in ("job_id", "lease_id"))  # fmt: skip
    fence_ok = row["fence"] is None or (isinstance(row["fence"], int) and row["fence"] >= 0)
    error_ok = row["error"] is None or isinstance(row["error"], str)
    try:
        payload_ok = isinstance(json.loads(row["payload"]), dict)
    except (TypeError, ValueError):
        payload_ok = False
    return row["state"] in _OWED and ids_ok and fence_ok and error_ok and payload_ok


async def carry_over(
    db: aiosqlite.Connection, rows: list[dict[str, Any]], clock: Callable[[], float]
) -> int:
    """Journal `rows` (from `read_owed`) in the fresh journal with their outbox entries.

    The caller holds a write transaction. Returns how many rows were carried over.
    """
    carried = 0
    now = clock()
    for row in rows:
        state = "uncertain" if row["state"] == "granted" else row["state"]
        error = UNCERTAIN_AFTER_REBUILD if row["state"] == "granted" else row["error"]
        # OR IGNORE: a torn file may hold a row twice, or a value a constraint refuses.
        inserted = await db.execute(
            "INSERT OR IGNORE INTO jobs (job_id, lease_id, fence, payload, state, outcome, error,"
            " leased_at, granted_at, printed_at, updated_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (row["job_id"], row["lease_id"], row["fence"], row["payload"], state, state,
             error, row["leased_at"] or now, row["granted_at"], row["printed_at"], now),
        )  # fmt: skip
        if inserted.rowcount != 1:
            continue
        await db.execute(
            "INSERT OR IGNORE INTO ack_outbox (job_id, lease_id, result, fence, error, queued_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (row["job_id"], row["lease_id"], state, row["fence"], error, now),
        )
        carried += 1
    return carried
