"""Carry what can be read out of an outbox that was moved aside as damaged.

A torn page loses the rows on it, not the file: the rows are read one at a time
from the front until an error, then from the back until an error, so the rows
after a bad page are read too. A row is carried only if it is whole: its fields
of the right types and, for a scan not yet delivered, a PDF that still hashes to
the SHA-256 recorded with it. Each keeps its idempotency key, so a scan the
coordinator already accepted is answered as the same job, never printed twice.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from badgeline.kiosk.events import kiosk_event

COLUMNS = (
    "seq", "scan_id", "kind", "attendee_id", "printer_target", "priority", "idempotency_key",
    "pdf", "pdf_sha256", "reprint_of", "reason", "delivery", "job_id", "job_state",
    "printer_id", "error_code", "error_message", "created_at", "updated_at",
)  # fmt: skip
_SELECT = f"SELECT {', '.join(COLUMNS)} FROM scans NOT INDEXED ORDER BY seq"


@dataclass(frozen=True)
class SalvageReport:
    moved_to: Path
    carried: int  # rows carried into the fresh outbox
    undelivered: int  # of which scans and reprints not yet delivered
    unreadable: int  # rows read but not whole, not carried
    # Scan numbers below the highest ever given that no row was read for: each a scan
    # on a page that could not be read, or one forgotten after it finished.
    not_read: int
    read_error: str | None  # what stopped the reading, if anything did

    def describe(self) -> str:
        text = (f"carried {self.carried} scans ({self.undelivered} not yet delivered) out of "
                f"{self.moved_to}")  # fmt: skip
        if self.unreadable or self.not_read or self.read_error:
            text += (f"; {self.unreadable} rows were damaged and left behind; {self.not_read}"
                     " scan numbers were not read (on a damaged page, or forgotten after they"
                     f" finished); reading stopped at: {self.read_error}")  # fmt: skip
        return text


@dataclass
class _Reading:
    rows: dict[int, dict[str, Any]]
    broken: int = 0
    seen: set[int] = field(default_factory=set)  # every scan number read, whole or not
    highest: int = 0  # the highest scan number ever given, as far as it can be read
    error: str | None = None


def read_rows(path: Path) -> _Reading:
    """The whole rows of `path`, and what could not be read of it."""
    reading = _Reading({})
    try:
        db = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as error:
        reading.error = str(error)
        return reading
    # A torn page can hold any bytes: text that is not UTF-8 reads as None (the row is
    # then not whole) instead of ending the reading of every row after it.
    db.text_factory = _text_or_none
    try:
        for order in ("", " DESC"):
            try:
                _read(db.execute(_SELECT + order), reading)
            except sqlite3.Error as error:
                reading.error = reading.error or str(error)
        with contextlib.suppress(sqlite3.Error, TypeError, ValueError):
            row = db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'scans'").fetchone()
            reading.highest = int(row[0]) if row else 0
    finally:
        db.close()
    reading.highest = max([reading.highest, *reading.seen])
    return reading


def _read(cursor: sqlite3.Cursor, reading: _Reading) -> None:
    while (row := cursor.fetchone()) is not None:  # one at a time: keep what came
        record = dict(zip(COLUMNS, row, strict=True))
        seq = record["seq"]
        if isinstance(seq, int) and seq in reading.seen:
            return  # from the back, reached the rows read from the front
        if isinstance(seq, int):
            reading.seen.add(seq)
        if _whole(record):
            reading.rows[seq] = record
        else:
            reading.broken += 1


def _text_or_none(raw: bytes) -> str | None:
    try:
        return raw.decode()
    except UnicodeDecodeError:
        return None


def _whole(row: dict[str, Any]) -> bool:
    texts_ok = all(isinstance(row[name], str) and row[name]
                   for name in ("scan_id", "attendee_id", "idempotency_key"))  # fmt: skip
    shape_ok = (
        isinstance(row["seq"], int) and row["kind"] in ("scan", "reprint")
        and row["delivery"] in ("pending", "accepted", "refused")
        and isinstance(row["created_at"], float) and isinstance(row["updated_at"], float)
    )  # fmt: skip
    if not (texts_ok and shape_ok):
        return False
    if row["delivery"] == "pending" and row["kind"] == "scan":
        pdf, sha = row["pdf"], row["pdf_sha256"]
        return isinstance(pdf, bytes) and hashlib.sha256(pdf).hexdigest() == sha
    if row["delivery"] == "pending":
        return isinstance(row["reprint_of"], str)
    return True


def carry_over(db: sqlite3.Connection, moved_to: Path) -> SalvageReport:
    """Insert the whole rows of `moved_to` into the fresh outbox `db` (one transaction)."""
    reading = read_rows(moved_to)
    db.execute("BEGIN IMMEDIATE")
    try:
        carried = undelivered = 0
        for row in (reading.rows[seq] for seq in sorted(reading.rows)):
            inserted = db.execute(
                f"INSERT OR IGNORE INTO scans ({', '.join(COLUMNS)})"
                f" VALUES ({', '.join('?' * len(COLUMNS))})",
                tuple(row[name] for name in COLUMNS),
            )
            carried += inserted.rowcount
            undelivered += inserted.rowcount * (row["delivery"] == "pending")
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    not_read = len(set(range(1, reading.highest + 1)) - reading.seen)
    report = SalvageReport(moved_to, carried, undelivered, reading.broken, not_read, reading.error)
    kiosk_event(
        "kiosk_outbox_salvaged",
        logging.ERROR,
        moved_to=str(moved_to),
        carried=carried,
        undelivered=undelivered,
        unreadable=reading.broken,
        not_read=not_read,
        read_error=reading.error,
    )
    return report
