"""Opening the outbox file: one holder at a time, durable settings, checked pages.

Durability: WAL with `synchronous = FULL`, so a commit is fsynced before it
returns (SQLite also fsyncs the folder when it creates the WAL); the file is
created 0600, as it holds attendees' badges. One Kiosk at a time: an exclusive
`flock` on `<outbox>.lock`, which the kernel releases when the holder dies, even
by kill -9, so a restarted kiosk opens it at once.

A file that fails its check is never used nor changed by default (OutboxCorrupt,
saying what to do); with `on_corrupt_outbox = "salvage"` it is moved aside to
`<name>.corrupt-<UTC time>` and what can be read of it is carried into a fresh
outbox (salvage.py).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from badgeline.kiosk.errors import KioskError, OutboxCorrupt, OutboxInUse
from badgeline.kiosk.events import kiosk_event
from badgeline.kiosk.salvage import SalvageReport, carry_over
from badgeline.private_files import FILE_MODE, create_private_file, private_dir
from badgeline.sqlite_files import move_aside

SCHEMA_VERSION = 2
# Version 2 added when each job's state was entered (the coordinator's clock, from its
# history or event) and where the kiosk is in the coordinator's job event stream.
EVENT_POSITION = """
CREATE TABLE event_position (
    one INTEGER PRIMARY KEY CHECK (one = 1),
    last_event_id TEXT NOT NULL,
    updated_at REAL NOT NULL
);
"""
SCHEMA = (
    """
CREATE TABLE scans (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    scan_id TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL CHECK (kind IN ('scan', 'reprint')),
    attendee_id TEXT NOT NULL,
    printer_target TEXT,
    priority INTEGER,
    idempotency_key TEXT NOT NULL UNIQUE,
    pdf BLOB,
    pdf_sha256 TEXT,
    reprint_of TEXT,
    reason TEXT,
    delivery TEXT NOT NULL CHECK (delivery IN ('pending', 'accepted', 'refused')),
    job_id TEXT,
    job_state TEXT,
    printer_id TEXT,
    error_code TEXT,
    error_message TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    job_state_at_ms INTEGER
);
CREATE INDEX scans_by_delivery ON scans (delivery, job_state);
CREATE INDEX scans_by_job ON scans (job_id);
"""
    + EVENT_POSITION
)
# From a version to the next: an outbox an earlier release wrote opens in this one.
MIGRATIONS = {1: "ALTER TABLE scans ADD COLUMN job_state_at_ms INTEGER;" + EVENT_POSITION}
# What SQLite says of a file whose pages are damaged, or that is not a database at all.
_CORRUPT_MESSAGES = ("not a database", "malformed", "corrupt")


class _Damaged(Exception):
    """The file fails its check; the message says how."""


@dataclass
class OpenedFile:
    db: sqlite3.Connection
    lock_fd: int
    salvage: SalvageReport | None = None


def take_lock(path: Path) -> int:
    lock_path = path.with_name(path.name + ".lock")
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise OutboxInUse(
            f"the outbox {path} is open in another Kiosk (this process or another): "
            "one outbox has one Kiosk; close the other first, or give this one its own outbox"
        ) from None
    return fd


def release_lock(fd: int) -> None:
    with contextlib.suppress(OSError):
        fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)


def open_file(path: Path, *, salvage: bool) -> OpenedFile:
    """Lock, open, check and (on a new file) create the outbox at `path`."""
    private_dir(path.parent)
    lock_fd = take_lock(path)
    try:
        return OpenedFile(_open_checked(path), lock_fd)
    except _Damaged as damage:
        if not salvage:
            release_lock(lock_fd)
            raise OutboxCorrupt(_refusal(path, str(damage))) from None
        reason = str(damage)
    except BaseException:
        release_lock(lock_fd)
        raise
    try:
        moved = move_aside(path, time.time())
        kiosk_event(
            "kiosk_outbox_moved_aside",
            logging.ERROR,
            outbox=str(path),
            moved_to=str(moved),
            reason=reason,
        )
        db = _open_checked(path)
    except BaseException:
        release_lock(lock_fd)
        raise
    try:
        return OpenedFile(db, lock_fd, carry_over(db, moved))
    except BaseException:
        db.close()
        release_lock(lock_fd)
        raise


def _refusal(path: Path, reason: str) -> str:
    return (
        f"the kiosk outbox {path} is damaged ({reason}); nothing was changed and no scan "
        "was delivered from it. It may hold scans not yet delivered. To start anyway, make "
        "the Kiosk with on_corrupt_outbox='salvage': the file is moved aside to "
        f"{path.name}.corrupt-<time> (kept for a post-mortem) and every scan that can still "
        "be read is carried into a fresh outbox with its idempotency key, so none prints "
        "twice; the log says how many were carried"
    )


def _open_checked(path: Path) -> sqlite3.Connection:
    create_private_file(path)
    try:
        db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=10)
    except sqlite3.Error as error:
        raise KioskError(f"cannot open the kiosk outbox {path}: {error}") from error
    try:
        # Read before anything is written: a file that is not an outbox is left as it was
        # (WAL mode, once set, is written into the file).
        db.execute("PRAGMA busy_timeout = 10000")
        # FULL: a commit is on disk before it returns; NORMAL in WAL mode may lose the last.
        db.execute("PRAGMA synchronous = FULL")
        _check(db)
        _create_or_accept_schema(db, path)
        _use_wal(db, path)
    except sqlite3.DatabaseError as error:
        db.close()
        if any(words in str(error).lower() for words in _CORRUPT_MESSAGES):
            raise _Damaged(str(error)) from error
        raise KioskError(f"cannot open the kiosk outbox {path}: {error}") from error
    except BaseException:
        db.close()
        raise
    return db


def _use_wal(db: sqlite3.Connection, path: Path) -> None:
    mode = str(db.execute("PRAGMA journal_mode = WAL").fetchone()[0]).lower()
    if mode != "wal":
        # A filesystem that cannot hold WAL's shared memory: the rollback journal with
        # synchronous=FULL is slower and as durable.
        kiosk_event("kiosk_outbox_not_wal", logging.WARNING, outbox=str(path), mode=mode)


def _check(db: sqlite3.Connection) -> None:
    # A small file: reading every page at open costs milliseconds, and finds a torn
    # page now rather than in the middle of a delivery.
    found = [str(row[0]) for row in db.execute("PRAGMA quick_check").fetchall()]
    if found != ["ok"]:
        raise _Damaged("quick_check: " + "; ".join(found[:3]))


def _create_or_accept_schema(db: sqlite3.Connection, path: Path) -> None:
    version = int(db.execute("PRAGMA user_version").fetchone()[0])
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if version == SCHEMA_VERSION and "scans" in tables:
        return
    if version in MIGRATIONS and "scans" in tables:
        _migrate(db, version)
        return
    if version > SCHEMA_VERSION:
        raise KioskError(
            f"the kiosk outbox {path} was written by a newer badgeline (outbox version "
            f"{version}, this one knows {SCHEMA_VERSION}): run that release, or upgrade this one"
        )
    if version != 0 or tables:
        raise KioskError(
            f"{path} is an SQLite file but not a kiosk outbox (tables: {sorted(tables)}): "
            "give outbox_path a file of its own"
        )
    try:
        db.executescript(
            f"BEGIN IMMEDIATE; {SCHEMA} PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;"
        )
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            db.execute("ROLLBACK")
        raise


def _migrate(db: sqlite3.Connection, version: int) -> None:
    """Bring an outbox an earlier release wrote up to this one's version, in one step."""
    script = "".join(MIGRATIONS[v] for v in range(version, SCHEMA_VERSION))
    try:
        db.executescript(
            f"BEGIN IMMEDIATE; {script} PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;"
        )
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            db.execute("ROLLBACK")
        raise
