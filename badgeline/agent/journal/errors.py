"""The journal's exceptions, and the one place that maps SQLite errors onto them.

The agent reacts to a kind of failure, not to an SQLite message: a write
failure is reported to the coordinator, a busy journal is retried, a corrupt
one is rebuilt at the next open.
"""

from __future__ import annotations

import sqlite3


class JournalError(Exception):
    """Base class of every journal failure."""


class IllegalTransitionError(JournalError):
    """A job's local state does not allow the transition asked for."""

    def __init__(
        self, job_id: str, lease_id: str, current: str, wanted: str, why: str = ""
    ) -> None:
        detail = f": {why}" if why else ""
        super().__init__(
            f"job {job_id} lease {lease_id}: cannot go from {current} to {wanted}{detail}"
        )
        self.job_id = job_id
        self.lease_id = lease_id
        self.current = current
        self.wanted = wanted


class UnknownLeaseError(JournalError):
    """A transition names a (job, lease) that was never journaled (or was pruned)."""

    def __init__(self, job_id: str, lease_id: str) -> None:
        super().__init__(f"job {job_id} lease {lease_id} is not in the journal")
        self.job_id = job_id
        self.lease_id = lease_id


class JournalWriteError(JournalError):
    """The journal could not be written: disk full, I/O error, read-only filesystem.

    SD cards that start failing make ext4 remount read-only, so that case is a
    write failure the agent must report, like a full disk.
    """


class JournalBusyError(JournalError):
    """Another connection held the journal locked for longer than the busy timeout."""


class JournalInUseError(JournalError):
    """Another process holds the journal (ownership.py): a second agent on it."""


class JournalCorruptError(JournalError):
    """The journal file is not a readable SQLite database, or fails its quick check."""


class JournalSchemaError(JournalError):
    """The migrations on disk and the journal's recorded schema version disagree."""


# Primary result codes (the low byte of an extended code) grouped by what the
# agent should do about them.
_WRITE_FAILURES = frozenset({sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_READONLY})
_BUSY = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})
_CORRUPTION = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})


def primary_code(error: sqlite3.Error) -> int | None:
    code = getattr(error, "sqlite_errorcode", None)
    return None if code is None else code & 0xFF


def translate(error: sqlite3.Error) -> JournalError:
    """Map an SQLite error to the journal exception the agent acts on."""
    code = primary_code(error)
    message = f"{error} ({getattr(error, 'sqlite_errorname', 'no sqlite code')})"
    if code in _WRITE_FAILURES:
        return JournalWriteError(message)
    if code in _BUSY:
        return JournalBusyError(message)
    if code in _CORRUPTION:
        return JournalCorruptError(message)
    return JournalError(message)
