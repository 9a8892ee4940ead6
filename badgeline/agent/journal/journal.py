"""The agent's journal: what it leased, was granted, printed, and still has to ack.

Every method is one SQLite transaction on one connection, fsynced before it
returns (WAL, synchronous=FULL). An asyncio lock keeps two coroutines from
interleaving statements inside each other's transactions on that connection.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiosqlite

from badgeline.agent.journal.connection import (
    open_database,
    sqlite_errors_translated,
    write_transaction,
)
from badgeline.agent.journal.errors import IllegalTransitionError, JournalError, UnknownLeaseError
from badgeline.agent.journal.models import JournalEntry, PendingAck, RecoveryPlan
from badgeline.agent.journal.ownership import JournalOwnership
from badgeline.agent.journal.rules import check_repeat, print_blocker
from badgeline.agent.journal.settings import JournalSettings
from badgeline.agent.journal.states import (
    FINISHED_STATES,
    RESULT_STATES,
    LocalJobState,
    already_there,
    may_transition,
)
from badgeline.protocol.failures import FailureReason

log = logging.getLogger("badgeline.agent.journal")

UNCERTAIN_AT_START_UP = (
    "agent restarted between the start grant and the print result:"
    " the badge may or may not have printed"
)

_SELECT_ENTRY = "SELECT * FROM jobs WHERE job_id = ? AND lease_id = ?"
_SELECT_PENDING = """
SELECT o.seq, o.job_id, o.lease_id, o.result, o.fence, o.error, o.reason, o.queued_at,
       j.ack_attempts
FROM ack_outbox AS o JOIN jobs AS j ON j.job_id = o.job_id AND j.lease_id = o.lease_id
ORDER BY o.seq LIMIT ?
"""
_FINISHED = "('" + "', '".join(sorted(FINISHED_STATES)) + "')"


class Journal:
    """Open with `await Journal.open(settings)`; close with `await journal.close()`."""

    def __init__(
        self,
        db: aiosqlite.Connection,
        settings: JournalSettings,
        clock: Callable[[], float],
        *,
        schema_version: int,
        moved_aside: Path | None,
    ) -> None:
        self._db: aiosqlite.Connection | None = db
        self._lock = asyncio.Lock()
        self._clock = clock
        self.settings = settings
        self.schema_version = schema_version
        # Where an unreadable journal was moved at open, for the agent to report.
        self.moved_aside = moved_aside
        # Grants made by this process: recover() must not call its own
        # in-flight print uncertain.
        self._granted_here: set[tuple[str, str]] = set()
        self._ownership: JournalOwnership | None = None

    @classmethod
    async def open(
        cls, settings: JournalSettings, *, clock: Callable[[], float] = time.time
    ) -> Journal:
        ownership = JournalOwnership(settings.path)  # before recovery can touch anything
        try:
            opened = await open_database(settings, clock)
        except BaseException:
            ownership.release()
            raise
        journal = cls(
            opened.db,
            settings,
            clock,
            schema_version=opened.schema_version,
            moved_aside=opened.moved_aside,
        )
        journal._ownership = ownership
        return journal

    async def close(self) -> None:
        db, self._db = self._db, None
        if db is not None:
            async with self._lock:
                await db.close()
        ownership, self._ownership = self._ownership, None
        if ownership is not None:
            ownership.release()

    async def __aenter__(self) -> Journal:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # ------------------------------------------------------------------ leases

    async def record_lease(
        self, job_id: str, lease_id: str, payload: Mapping[str, Any]
    ) -> JournalEntry:
        """Journal a leased job. Returns the row: print only if its state is `leased`.

        The same lease again returns the existing row unchanged. A new lease of
        a job journaled under another lease drops the older lease if it was
        never granted; it is itself journaled as `dropped` when an older lease
        printed (or may have printed) the badge here: that badge is a physical
        fact, and its ack tells the coordinator so.
        """
        payload_json = json.dumps(dict(payload), sort_keys=True, separators=(",", ":"))
        async with self._writing() as db:
            existing = await self._fetch(db, job_id, lease_id)
            if existing is not None:
                return existing
            blocker = print_blocker(await self._history(db, job_id))
            now = self._clock()
            state, error = LocalJobState.LEASED, None
            if blocker is None:
                await db.execute(
                    "UPDATE jobs SET state = 'dropped', error = ?, updated_at = ?"
                    " WHERE job_id = ? AND state = 'leased'",
                    (f"superseded by lease {lease_id}", now, job_id),
                )
            else:
                state = LocalJobState.DROPPED
                error = f"not printing again: lease {blocker.lease_id} is {blocker.state}"
                log.warning("job %s lease %s dropped: %s", job_id, lease_id, error)
            await db.execute(
                "INSERT INTO jobs (job_id, lease_id, payload, state, error, leased_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (job_id, lease_id, payload_json, state, error, now, now),
            )
            return await self._require(db, job_id, lease_id)

    async def record_grant(self, job_id: str, lease_id: str, fence: int) -> JournalEntry:
        """Journal the coordinator's start grant; only after this may bytes go to the printer."""
        entry = await self._transition(
            job_id,
            lease_id,
            LocalJobState.GRANTED,
            {"fence": fence, "granted_at": self._clock()},
            repeat_must_match={"fence": fence},
        )
        self._granted_here.add((job_id, lease_id))
        return entry

    async def record_dropped(self, job_id: str, lease_id: str, reason: str) -> JournalEntry:
        """The start grant was refused (lease revoked, already printed, canceled)."""
        return await self._transition(job_id, lease_id, LocalJobState.DROPPED, {"error": reason})

    # ----------------------------------------------------------------- results

    async def record_printed(self, job_id: str, lease_id: str) -> JournalEntry:
        """The printer took the badge; queues a `printed` ack. Only from `granted`."""
        return await self._transition(
            job_id, lease_id, LocalJobState.PRINTED, {"printed_at": self._clock()}
        )

    async def record_failed(
        self, job_id: str, lease_id: str, error: str, reason: FailureReason | None = None
    ) -> JournalEntry:
        """The badge could not be printed (before or after the grant); queues a `failed` ack
        with its classified `reason`."""
        changes = {"error": error, "reason": None if reason is None else str(reason)}
        return await self._transition(job_id, lease_id, LocalJobState.FAILED, changes)

    async def record_uncertain(self, job_id: str, lease_id: str, error: str) -> JournalEntry:
        """The print's outcome is unknown (e.g. the link dropped mid-send); queues an ack."""
        return await self._transition(job_id, lease_id, LocalJobState.UNCERTAIN, {"error": error})

    # ------------------------------------------------------------------ outbox

    async def pending_acks(self, limit: int | None = None) -> list[PendingAck]:
        """Unconfirmed results, oldest first."""
        async with self._reading() as db:
            rows = await db.execute_fetchall(_SELECT_PENDING, (-1 if limit is None else limit,))
        return [PendingAck.from_row(row) for row in rows]

    async def record_ack_attempt(self, job_id: str, lease_id: str) -> int:
        """Count one failed delivery of an ack; returns the attempts so far."""
        async with self._writing() as db:
            entry = await self._require(db, job_id, lease_id)
            if entry.state not in RESULT_STATES:
                return entry.ack_attempts
            await db.execute(
                "UPDATE jobs SET ack_attempts = ack_attempts + 1 WHERE job_id = ? AND lease_id = ?",
                (job_id, lease_id),
            )
            return entry.ack_attempts + 1

    async def mark_acked(self, job_id: str, lease_id: str) -> JournalEntry:
        """The coordinator confirmed the result: leave the outbox. Idempotent."""
        return await self._transition(
            job_id, lease_id, LocalJobState.ACKED, {"acked_at": self._clock()}
        )

    # ------------------------------------------------- start-up and housekeeping

    async def recover(self) -> RecoveryPlan:
        """Classify what an earlier run left behind; call once at start-up.

        Grants without a result become `uncertain` (and queue that ack): the
        agent must not print them again on its own. Grants made by this
        process are left alone, so a late call cannot disown a running print.
        """
        async with self._writing() as db:
            marked = []
            for entry in await self._in_state(db, LocalJobState.GRANTED):
                key = (entry.job_id, entry.lease_id)
                if key in self._granted_here:
                    continue
                uncertain = {"error": UNCERTAIN_AT_START_UP}
                await self._apply(db, entry, LocalJobState.UNCERTAIN, uncertain)
                marked.append(await self._require(db, *key))
                log.warning("job %s lease %s: %s", *key, UNCERTAIN_AT_START_UP)
            retry = await self._in_state(db, LocalJobState.LEASED)
            rows = await db.execute_fetchall(_SELECT_PENDING, (-1,))
        pending = [PendingAck.from_row(row) for row in rows]
        return RecoveryPlan(acks_to_send=pending, marked_uncertain=marked, grants_to_retry=retry)

    async def counts(self) -> dict[str, int]:
        """Rows per local state (every state present, zeros included), for heartbeats."""
        async with self._reading() as db:
            rows = await db.execute_fetchall("SELECT state, COUNT(*) FROM jobs GROUP BY state")
        counts = {str(state): 0 for state in LocalJobState}
        counts.update({row[0]: row[1] for row in rows})
        return counts

    async def prune(self) -> int:
        """Delete acked and dropped rows past the retention age or count; returns rows deleted.

        Pruned rows also stop guarding against printing a job twice here; the
        coordinator's own `already_printed` refusal remains the main guard.
        """
        cutoff = self._clock() - self.settings.retention_s
        async with self._writing() as db:
            by_age = await db.execute(
                f"DELETE FROM jobs WHERE state IN {_FINISHED} AND updated_at < ?", (cutoff,)
            )
            by_count = await db.execute(
                f"DELETE FROM jobs WHERE state IN {_FINISHED} AND entry_id NOT IN"
                f" (SELECT entry_id FROM jobs WHERE state IN {_FINISHED}"
                "  ORDER BY entry_id DESC LIMIT ?)",
                (self.settings.max_finished_rows,),
            )
            return by_age.rowcount + by_count.rowcount

    async def get(self, job_id: str, lease_id: str | None = None) -> JournalEntry | None:
        """One lease of a job, or its latest lease when `lease_id` is None."""
        async with self._reading() as db:
            if lease_id is not None:
                return await self._fetch(db, job_id, lease_id)
            history = await self._history(db, job_id)
        return history[-1] if history else None

    async def history(self, job_id: str) -> list[JournalEntry]:
        """Every journaled lease of a job, oldest first."""
        async with self._reading() as db:
            return await self._history(db, job_id)

    async def connection_settings(self) -> dict[str, Any]:
        """The durability pragmas in force on the live connection (for tests and diagnostics)."""
        values: dict[str, Any] = {}
        async with self._reading() as db:
            for pragma in ("journal_mode", "synchronous", "busy_timeout", "wal_autocheckpoint"):
                rows = list(await db.execute_fetchall(f"PRAGMA {pragma}"))
                values[pragma] = rows[0][0]
        return values

    # --------------------------------------------------------------- internals

    @asynccontextmanager
    async def _writing(self) -> AsyncIterator[aiosqlite.Connection]:
        async with self._lock, write_transaction(self._open_db()) as db:
            yield db

    @asynccontextmanager
    async def _reading(self) -> AsyncIterator[aiosqlite.Connection]:
        # Reads take the lock too: on a shared connection they would otherwise
        # see another coroutine's uncommitted writes.
        async with self._lock:
            with sqlite_errors_translated():
                yield self._open_db()

    def _open_db(self) -> aiosqlite.Connection:
        if self._db is None:
            raise JournalError("the journal is closed")
        return self._db

    async def _transition(
        self,
        job_id: str,
        lease_id: str,
        target: LocalJobState,
        changes: dict[str, Any],
        *,
        repeat_must_match: Mapping[str, Any] | None = None,
    ) -> JournalEntry:
        async with self._writing() as db:
            entry = await self._require(db, job_id, lease_id)
            if already_there(entry.state, entry.outcome, target):
                check_repeat(entry, target, repeat_must_match or {})
                return entry
            if not may_transition(entry.state, target):
                raise IllegalTransitionError(job_id, lease_id, entry.state, target)
            await self._apply(db, entry, target, changes)
            return await self._require(db, job_id, lease_id)

    async def _apply(
        self,
        db: aiosqlite.Connection,
        entry: JournalEntry,
        target: LocalJobState,
        changes: dict[str, Any],
    ) -> None:
        """Write one legal transition and its outbox entry, inside the caller's transaction."""
        columns = {"state": str(target), "updated_at": self._clock(), **changes}
        if target in RESULT_STATES:
            columns["outcome"] = str(target)
        assignments = ", ".join(f"{column} = ?" for column in columns)
        key = (entry.job_id, entry.lease_id)
        await db.execute(
            f"UPDATE jobs SET {assignments} WHERE job_id = ? AND lease_id = ?",
            (*columns.values(), *key),
        )
        if target in RESULT_STATES:
            await db.execute(
                "INSERT INTO ack_outbox (job_id, lease_id, result, fence, error, reason, queued_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (*key, str(target), entry.fence, columns.get("error"), columns.get("reason"),
                 columns["updated_at"]),
            )  # fmt: skip
        elif target is LocalJobState.ACKED:
            await db.execute("DELETE FROM ack_outbox WHERE job_id = ? AND lease_id = ?", key)

    async def _fetch(
        self, db: aiosqlite.Connection, job_id: str, lease_id: str
    ) -> JournalEntry | None:
        rows = list(await db.execute_fetchall(_SELECT_ENTRY, (job_id, lease_id)))
        return JournalEntry.from_row(rows[0]) if rows else None

    async def _require(self, db: aiosqlite.Connection, job_id: str, lease_id: str) -> JournalEntry:
        entry = await self._fetch(db, job_id, lease_id)
        if entry is None:
            raise UnknownLeaseError(job_id, lease_id)
        return entry

    async def _history(self, db: aiosqlite.Connection, job_id: str) -> list[JournalEntry]:
        rows = await db.execute_fetchall(
            "SELECT * FROM jobs WHERE job_id = ? ORDER BY entry_id", (job_id,)
        )
        return [JournalEntry.from_row(row) for row in rows]

    async def _in_state(self, db: aiosqlite.Connection, state: LocalJobState) -> list[JournalEntry]:
        rows = await db.execute_fetchall(
            "SELECT * FROM jobs WHERE state = ? ORDER BY entry_id", (str(state),)
        )
        return [JournalEntry.from_row(row) for row in rows]
