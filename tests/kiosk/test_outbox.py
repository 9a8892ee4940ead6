"""The outbox: a scan is on disk when submit returns, a bad scan is refused before it is
kept, one Kiosk holds an outbox, and a damaged file is never used silently: refused
untouched by default, or moved aside with every readable scan carried over when told."""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError

from badgeline.kiosk import (
    Delivery,
    Kiosk,
    KioskError,
    KioskSettings,
    OutboxCorrupt,
    OutboxInUse,
    ScanInvalid,
)
from badgeline.kiosk.outbox import Outbox
from badgeline.kiosk.records import Kind, ScanRecord
from tests.conftest import KIOSK_TOKEN
from tests.kiosk.conftest import FAST, MakeKiosk, closed_port, unique_attendee

PAGE = 4096


@pytest.fixture
def nowhere() -> Iterator[str]:
    """A coordinator URL where nothing answers: every scan stays in the outbox."""
    with closed_port() as port:
        yield f"http://127.0.0.1:{port}"


def outbox_rows(path: Path) -> list[dict[str, object]]:
    """The outbox as another process reads it (read-only), PDFs hashed."""
    with contextlib.closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)) as db:
        db.row_factory = sqlite3.Row
        rows = [dict(row) for row in db.execute("SELECT * FROM scans ORDER BY seq")]
    for row in rows:
        pdf = row.pop("pdf")
        row["pdf_hash"] = hashlib.sha256(pdf).hexdigest() if isinstance(pdf, bytes) else None
    return rows


def test_a_scan_is_on_disk_with_its_key_when_submit_returns(
    make_kiosk: MakeKiosk, nowhere: str, badge: bytes, tmp_path: Path
) -> None:
    kiosk = make_kiosk(nowhere)
    attendee = unique_attendee()
    ticket = kiosk.submit(attendee, badge, "pool:hall-a", priority=7)
    # THEN another reader of the file finds it: the badge, the key the ticket names
    [row] = outbox_rows(kiosk.settings.outbox_path)
    assert row["scan_id"] == ticket.scan_id and row["delivery"] == "pending"
    assert (row["attendee_id"], row["printer_target"], row["priority"]) == (
        attendee, "pool:hall-a", 7)  # fmt: skip
    assert row["idempotency_key"] == ticket.idempotency_key
    assert ticket.idempotency_key.startswith("scan-") and 8 <= len(ticket.idempotency_key) <= 80
    assert row["pdf_hash"] == hashlib.sha256(badge).hexdigest()
    # AND the file is the kiosk's alone, its commits fsynced (WAL, synchronous FULL)
    assert os.stat(kiosk.settings.outbox_path).st_mode & 0o777 == 0o600
    # AND a badge given as a file is read into the outbox, so the file may go
    path = tmp_path / "badge.pdf"
    path.write_bytes(badge)
    from_file = kiosk.submit(unique_attendee(), path, "printer-a")
    path.unlink()
    assert kiosk.status(from_file, refresh=False).delivery is Delivery.PENDING
    assert len(outbox_rows(kiosk.settings.outbox_path)) == 2


@pytest.mark.parametrize(
    ("attendee", "pdf", "target", "priority", "named"),
    [
        ("a", b"%PDF-1.4 x", "printer-a", 100, "attendee_id"),
        ("att_0001", b"%PDF-1.4 x", "printer_a", 100, "printer_target"),
        ("att_0001", b"%PDF-1.4 x", "printer-a", 5000, "priority"),
        ("att_0001", b"<html>", "printer-a", 100, "pdf: not a PDF"),
        ("att_0001", b"%PDF-" + b"x" * 6 * 1024 * 1024, "printer-a", 100, "pdf: over"),
    ],
)
def test_a_scan_the_coordinator_would_refuse_is_refused_at_submit_and_not_kept(
    make_kiosk: MakeKiosk, nowhere: str, attendee: str, pdf: bytes, target: str,
    priority: int, named: str,
) -> None:  # fmt: skip
    kiosk = make_kiosk(nowhere)
    with pytest.raises(ScanInvalid, match=named):
        kiosk.submit(attendee, pdf, target, priority=priority)
    assert outbox_rows(kiosk.settings.outbox_path) == []


def test_an_outbox_has_one_kiosk_at_a_time(
    make_kiosk: MakeKiosk, nowhere: str, badge: bytes
) -> None:
    first = make_kiosk(nowhere)
    first.submit(unique_attendee(), badge, "printer-a")
    with pytest.raises(OutboxInUse, match="open in another Kiosk"):
        make_kiosk(nowhere)
    # AND once the first is closed, the next one opens it, with its scan
    first.close()
    assert make_kiosk(nowhere).undelivered == 1


def test_settings_are_checked_when_the_kiosk_is_made(tmp_path: Path) -> None:
    base = {"token": KIOSK_TOKEN, "outbox_path": tmp_path / "o.sqlite3"}
    with pytest.raises(ValidationError, match="give coordinator_urls, or discover"):
        KioskSettings(**base)
    with pytest.raises(ValidationError, match="without a path"):
        KioskSettings(**base, coordinator_urls="http://venue:8420/v1")
    with pytest.raises(ValidationError, match="no such CA file"):
        KioskSettings(**base, coordinator_urls="https://venue:8420", ca_file=tmp_path / "ca")
    assert KioskSettings(**base, coordinator_urls="http://venue:8420/").coordinator_urls == (
        "http://venue:8420",)  # fmt: skip


def _kiosk(path: Path, url: str, **options: object) -> Kiosk:
    return Kiosk(coordinator_urls=url, token=KIOSK_TOKEN, outbox_path=path, **FAST, **options)


def test_a_file_that_is_not_an_outbox_is_refused_and_left_as_it_was(
    tmp_path: Path, nowhere: str
) -> None:
    path = tmp_path / "outbox.sqlite3"
    path.write_bytes(b"these are not the pages you are looking for" * 200)
    before = path.read_bytes()
    with pytest.raises(OutboxCorrupt) as refused:
        _kiosk(path, nowhere)
    # THEN the error says what is wrong and what to do, and nothing was touched
    message = str(refused.value)
    assert str(path) in message and "not a database" in message
    assert "on_corrupt_outbox='salvage'" in message and "moved aside" in message
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["outbox.sqlite3", "outbox.sqlite3.lock"]


def test_an_sqlite_file_of_something_else_is_refused_and_left_as_it_was(
    tmp_path: Path, nowhere: str
) -> None:
    # GIVEN outbox_path naming another program's database (a journal, say)
    path = tmp_path / "journal.sqlite3"
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE jobs (job_id TEXT)")
        db.commit()
    before = path.read_bytes()
    # WHEN a kiosk is made on it THEN it says so, and writes nothing into it
    with pytest.raises(KioskError, match="not a kiosk outbox"):
        _kiosk(path, nowhere)
    assert path.read_bytes() == before
    assert not path.with_name("journal.sqlite3-wal").exists()


def test_a_torn_outbox_is_salvaged_when_told_and_every_readable_scan_keeps_its_key(
    tmp_path: Path, nowhere: str, badge: bytes
) -> None:
    # GIVEN an outbox of 30 scans not yet delivered, one of whose pages is torn
    path = tmp_path / "outbox.sqlite3"
    kiosk = _kiosk(path, nowhere)
    tickets = {kiosk.submit(f"att_{n:04d}", badge, "printer-a").idempotency_key for n in range(30)}
    kiosk.close()
    data = bytearray(path.read_bytes())
    torn = len(data) // PAGE // 2
    data[torn * PAGE : (torn + 1) * PAGE] = bytes(range(256)) * (PAGE // 256)
    path.write_bytes(bytes(data))
    # WHEN a kiosk opens it as it is THEN it refuses, and the file is untouched
    with pytest.raises(OutboxCorrupt, match="damaged"):
        _kiosk(path, nowhere)
    assert path.read_bytes() == bytes(data)
    # WHEN a kiosk is told to salvage it
    kiosk = _kiosk(path, nowhere, on_corrupt_outbox="salvage")
    report = kiosk.salvage
    # THEN the damaged file is kept aside, and every row is carried or counted as damaged
    assert report is not None and report.moved_to.read_bytes() == bytes(data)
    assert report.moved_to.name.startswith("outbox.sqlite3.corrupt-")
    assert 0 < report.carried < 30
    assert report.carried + report.unreadable + report.not_read == 30
    # AND each scan carried is whole: its key, its badge, still to deliver
    kiosk.close()
    carried = outbox_rows(path)
    assert len(carried) == report.carried == report.undelivered
    assert {row["idempotency_key"] for row in carried} <= tickets
    assert {row["pdf_hash"] for row in carried} == {hashlib.sha256(badge).hexdigest()}
    assert {row["delivery"] for row in carried} == {"pending"}


def test_finished_scans_are_forgotten_after_their_time_and_undelivered_ones_never(
    tmp_path: Path, badge: bytes
) -> None:
    clock = [1000.0]
    outbox = Outbox(tmp_path / "outbox.sqlite3", clock=lambda: clock[0])
    try:
        kiosk_rows = [outbox.add(_record(f"scan_{n:016x}", f"scan-key-{n:08d}", badge), badge)
                      for n in range(3)]  # fmt: skip
        outbox.mark_refused(kiosk_rows[0].scan_id, "unknown_printer", "no printer-zz")
        outbox.mark_accepted(kiosk_rows[1].scan_id, "job_00000000000000aa", "printed", None)
        clock[0] = 2000.0
        assert outbox.forget_finished(before=1500.0) == 2
        assert [r.scan_id for r in outbox.all()] == [kiosk_rows[2].scan_id]
    finally:
        outbox.close()


def _record(scan_id: str, key: str, pdf: bytes) -> ScanRecord:
    return ScanRecord(0, scan_id, Kind.SCAN, "att_0001", "printer-a", 100, key,
                      hashlib.sha256(pdf).hexdigest(), None, None, Delivery.PENDING, None, None,
                      None, None, None, 0.0, 0.0)  # fmt: skip
