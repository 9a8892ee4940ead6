"""The kiosk's outbox: every scan, durable before `submit` returns, until it is delivered.

One SQLite file (outbox_file.py opens it), one connection shared by the kiosk's
threads under a lock: each write is one short transaction, fsynced at its
commit. A write that fails (disk full, read-only, I/O error) is rolled back and
raised as OutboxWriteError; what was committed before stays as it was.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from badgeline.kiosk.errors import OutboxWriteError
from badgeline.kiosk.outbox_file import open_file, release_lock
from badgeline.kiosk.records import TERMINAL_JOB_STATES, Delivery, Kind, ScanRecord
from badgeline.kiosk.salvage import SalvageReport

_FIELDS = (
    "seq, scan_id, kind, attendee_id, printer_target, priority, idempotency_key, pdf_sha256,"
    " reprint_of, reason, delivery, job_id, job_state, printer_id, error_code, error_message,"
    " created_at, updated_at, job_state_at_ms"
)
_TERMINAL = tuple(sorted(TERMINAL_JOB_STATES))
_IN_TERMINAL = f"({', '.join('?' * len(_TERMINAL))})"


def _record(row: tuple[Any, ...]) -> ScanRecord:
    values = list(row)
    values[2], values[10] = Kind(values[2]), Delivery(values[10])
    return ScanRecord(*values)


class Outbox:
    def __init__(self, path: Path, *, salvage: bool = False,
                 clock: Callable[[], float] = time.time) -> None:  # fmt: skip
        opened = open_file(path, salvage=salvage)
        self.path = path
        self.salvage: SalvageReport | None = opened.salvage
        self._db = opened.db
        self._lock_fd: int | None = opened.lock_fd
        self._clock = clock
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            if self._lock_fd is None:
                return
            self._db.close()
            release_lock(self._lock_fd)
            self._lock_fd = None

    # ------------------------------------------------------------ writes

    @contextlib.contextmanager
    def _write(self, what: str) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    yield self._db
                    self._db.execute("COMMIT")
                except BaseException:
                    # SQLite may have rolled back already (after SQLITE_FULL): either way
                    # the connection is left outside a transaction, all that is needed.
                    with contextlib.suppress(sqlite3.Error):
                        self._db.execute("ROLLBACK")
                    raise
            except sqlite3.Error as error:
                raise OutboxWriteError(
                    f"the kiosk outbox {self.path} could not {what}: {error} (disk full, "
                    "read-only or failing?); nothing of this change was kept"
                ) from error

    def add(self, record: ScanRecord, pdf: bytes | None) -> ScanRecord:
        """Keep a new scan or reprint request; durable when this returns."""
        now = self._clock()
        with self._write("keep the scan") as db:
            cursor = db.execute(
                "INSERT INTO scans (scan_id, kind, attendee_id, printer_target, priority,"
                " idempotency_key, pdf, pdf_sha256, reprint_of, reason, delivery,"
                " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?)",
                (record.scan_id, record.kind.value, record.attendee_id, record.printer_target,
                 record.priority, record.idempotency_key, pdf, record.pdf_sha256,
                 record.reprint_of, record.reason, now, now),
            )  # fmt: skip
            seq = cursor.lastrowid
        assert seq is not None
        return dataclasses.replace(record, seq=seq, delivery=Delivery.PENDING, created_at=now,
                                   updated_at=now)  # fmt: skip

    def mark_accepted(
        self, scan_id: str, job_id: str, job_state: str, printer_id: str | None
    ) -> None:
        """The coordinator took it: keep its job, and drop the PDF it no longer needs.
        When the job entered that state the answer does not say (job_state_at_ms)."""
        with self._write("record the scan's job") as db:
            db.execute(
                "UPDATE scans SET delivery = 'accepted', job_id = ?, job_state = ?,"
                " printer_id = ?, job_state_at_ms = NULL, pdf = NULL, updated_at = ?"
                " WHERE scan_id = ?",
                (job_id, job_state, printer_id, self._clock(), scan_id),
            )

    def mark_refused(self, scan_id: str, code: str, message: str) -> None:
        with self._write("record the scan's refusal") as db:
            db.execute(
                "UPDATE scans SET delivery = 'refused', error_code = ?, error_message = ?,"
                " pdf = NULL, updated_at = ? WHERE scan_id = ?",
                (code, message, self._clock(), scan_id),
            )

    def set_job_state(
        self, scan_id: str, job_state: str, printer_id: str | None, at_ms: int | None,
        last_event_id: str | None = None,
    ) -> None:  # fmt: skip
        """The job's state, and when it entered it; with `last_event_id`, in the same
        commit, the event stream's position after the event that told it."""
        with self._write("record the job's state") as db:
            db.execute(
                "UPDATE scans SET job_state = ?, printer_id = coalesce(?, printer_id),"
                " job_state_at_ms = ?, updated_at = ? WHERE scan_id = ?",
                (job_state, printer_id, at_ms, self._clock(), scan_id),
            )
            if last_event_id is not None:
                self._put_position(db, last_event_id)

    def set_last_event_id(self, last_event_id: str | None) -> None:
        """Where the kiosk is in the coordinator's job event stream (None: nowhere, the
        next stream starts from now)."""
        with self._write("record the event stream's position") as db:
            if last_event_id is None:
                db.execute("DELETE FROM event_position")
            else:
                self._put_position(db, last_event_id)

    def _put_position(self, db: sqlite3.Connection, last_event_id: str) -> None:
        db.execute(
            "INSERT INTO event_position (one, last_event_id, updated_at) VALUES (1, ?, ?)"
            " ON CONFLICT (one) DO UPDATE SET last_event_id = excluded.last_event_id,"
            " updated_at = excluded.updated_at",
            (last_event_id, self._clock()),
        )

    def forget_finished(self, before: float) -> int:
        """Drop scans that finished before `before`; never one still to deliver or follow."""
        with self._write("forget finished scans") as db:
            cursor = db.execute(
                "DELETE FROM scans WHERE updated_at < ? AND (delivery = 'refused'"
                f" OR (delivery = 'accepted' AND job_state IN {_IN_TERMINAL}))",
                (before, *_TERMINAL),
            )
        return cursor.rowcount

    # ------------------------------------------------------------ reads

    def _select(self, where: str, params: tuple[Any, ...] = ()) -> list[ScanRecord]:
        with self._lock:
            rows = self._db.execute(f"SELECT {_FIELDS} FROM scans {where}", params).fetchall()
        return [_record(row) for row in rows]

    def pending(self) -> list[ScanRecord]:
        """Scans and reprints not yet delivered, oldest first: the order they were made."""
        return self._select("WHERE delivery = 'pending' ORDER BY seq")

    def unfinished_jobs(self) -> list[ScanRecord]:
        """Delivered scans whose job has not ended: the ones whose state is followed."""
        return self._select(
            "WHERE delivery = 'accepted' AND (job_state IS NULL OR job_state NOT IN"
            f" {_IN_TERMINAL}) ORDER BY seq",
            _TERMINAL,
        )

    def get(self, scan_id: str) -> ScanRecord | None:
        found = self._select("WHERE scan_id = ?", (scan_id,))
        return found[0] if found else None

    def by_job(self, job_id: str) -> ScanRecord | None:
        found = self._select("WHERE job_id = ? ORDER BY seq LIMIT 1", (job_id,))
        return found[0] if found else None

    def by_key(self, idempotency_key: str) -> ScanRecord | None:
        found = self._select("WHERE idempotency_key = ?", (idempotency_key,))
        return found[0] if found else None

    def last_event_id(self) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT last_event_id FROM event_position").fetchone()
        return None if row is None else str(row[0])

    def all(self) -> list[ScanRecord]:
        return self._select("ORDER BY seq")

    def pdf(self, scan_id: str) -> bytes | None:
        with self._lock:
            row = self._db.execute("SELECT pdf FROM scans WHERE scan_id = ?", (scan_id,)).fetchone()
        return None if row is None else row[0]

    def count_pending(self) -> int:
        with self._lock:
            row = self._db.execute("SELECT count(*) FROM scans WHERE delivery = 'pending'")
            return int(row.fetchone()[0])
