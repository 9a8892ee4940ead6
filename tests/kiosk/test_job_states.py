"""The job state sink keeps what is newest whichever source told it and in whatever
order the reports come: a stream that resumes replays changes a read already told,
a read answered before an event may be handled after it, and an event may come
before the deliverer has recorded the job. Each change is reported once, in order.
A real outbox file; no coordinator (the sources' part is test_job_events.py)."""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from badgeline.kiosk.outbox import Outbox
from badgeline.kiosk.records import Delivery, Kind, ScanRecord
from badgeline.kiosk.states import JobChange, JobStates

JOB = "job_00000000000000aa"
KEY = "desk-1-0123456789abcdef"
T = 1_767_600_000_000  # ms, the coordinator's clock


@pytest.fixture
def outbox(tmp_path: Path) -> Iterator[Outbox]:
    outbox = Outbox(tmp_path / "outbox.sqlite3")
    yield outbox
    outbox.close()


class Reports:
    """What the sink told the kiosk: (delivery, job state) per change, in order."""

    def __init__(self) -> None:
        self.told: list[tuple[str, str | None]] = []

    def __call__(self, record: ScanRecord) -> None:
        self.told.append((record.delivery.value, record.job_state))


def kept_scan(outbox: Outbox, key: str = KEY) -> ScanRecord:
    pdf = b"%PDF-1.4 badge"
    return outbox.add(ScanRecord(0, "scan_" + key[-16:], Kind.SCAN, "att_0001", "printer-a",
                                 100, key, hashlib.sha256(pdf).hexdigest(), None, None,
                                 Delivery.PENDING, None, None, None, None, None, 0.0, 0.0),
                      pdf)  # fmt: skip


def event(seq: int, state: str, previous: str | None, at_ms: int, job_id: str = JOB,
          key: str = KEY) -> JobChange:  # fmt: skip
    return JobChange.from_json({
        "id": f"{at_ms}-{seq}", "job_id": job_id, "idempotency_key": key, "state": state,
        "previous_state": previous, "printer_id": "printer-a", "at": at_ms / 1000,
    })  # fmt: skip


def answer(*steps: tuple[str, int]) -> dict[str, Any]:
    """A GET /v1/jobs/{id} answer whose history went through these (state, at ms)."""
    history, previous = [], None
    for state, at_ms in steps:
        history.append({"at": at_ms / 1000, "from": previous, "to": state, "actor": "test"})
        previous = state
    return {"job_id": JOB, "state": steps[-1][0], "printer_id": "printer-a", "history": history}


def test_late_and_replayed_reports_change_nothing_and_each_change_is_told_once(
    outbox: Outbox,
) -> None:
    reports = Reports()
    states = JobStates(outbox, reports)
    scan = kept_scan(outbox)
    # GIVEN a delivered scan, its job queued
    states.delivered(scan, JOB, "queued", "printer-a")
    assert states.event(event(0, "queued", None, T), f"{T}-0")
    # WHEN a read tells it is printing (the stream was down: it missed the lease)
    states.answered(JOB, answer(("queued", T), ("leased", T + 5), ("printing", T + 9)))
    # AND the resumed stream replays the lease and the start, then tells the print
    assert not states.event(event(1, "leased", "queued", T + 5), f"{T + 5}-0")
    assert not states.event(event(2, "printing", "leased", T + 9), f"{T + 9}-0")
    # AND a read answered before the print is handled after it
    states.event(event(3, "printed", "printing", T + 20), f"{T + 20}-0")
    states.answered(JOB, answer(("queued", T), ("leased", T + 5), ("printing", T + 9)))
    # THEN the kiosk was told each change once, in order, and the outbox has the last
    assert reports.told == [("accepted", "queued"), ("accepted", "printing"),
                            ("accepted", "printed")]  # fmt: skip
    record = outbox.by_job(JOB)
    assert record is not None and (record.job_state, record.job_state_at_ms) == ("printed", T + 20)
    # AND the stream's place was kept with the changes it brought, not with the replays
    assert outbox.last_event_id() == f"{T + 20}-0"


def test_changes_within_one_millisecond_are_told_in_their_order(outbox: Outbox) -> None:
    reports = Reports()
    states = JobStates(outbox, reports)
    states.delivered(kept_scan(outbox), JOB, "queued", "printer-a")
    # WHEN a lease and its start fall in the same millisecond
    states.event(event(0, "leased", "queued", T), None)
    states.event(event(1, "printing", "leased", T), None)
    # THEN the start is newer than the lease, and a read that saw only the lease is older
    states.answered(JOB, answer(("queued", T - 3), ("leased", T)))
    states.event(event(1, "printing", "leased", T), None)  # a replay
    assert [state for _, state in reports.told] == ["queued", "leased", "printing"]


def test_events_before_the_job_is_recorded_are_applied_in_order_once_it_is(
    outbox: Outbox,
) -> None:
    reports = Reports()
    states = JobStates(outbox, reports)
    scan = kept_scan(outbox)
    reprint_job, reprint_key = "job_00000000000000bb", "reprint:job_00000000000000aa:1"
    # GIVEN events of a scan still pending (found by its key) and of a job the outbox
    # does not know yet (a reprint whose answer is on its way), and of another desk's
    for change in (event(0, "queued", None, T), event(1, "leased", "queued", T + 4),
                   event(2, "queued", None, T + 5, reprint_job, reprint_key),
                   event(3, "queued", None, T + 6, "job_00000000000000cc", "desk-2-x"),
                   event(4, "printing", "leased", T + 7)):  # fmt: skip
        assert not states.event(change, change.event_id)
    assert reports.told == []
    # WHEN the deliverer records the scan's job (its answer said queued)
    states.delivered(scan, JOB, "queued", "printer-a")
    states.release_held(scan, JOB)
    # THEN the held changes follow the acceptance, in order, each once
    assert reports.told == [("accepted", "queued"), ("accepted", "leased"),
                            ("accepted", "printing")]  # fmt: skip
    # AND the reprint's held event waits for its own job's record
    reprint = outbox.add(ScanRecord(0, "scan_reprint00000001", Kind.REPRINT, "att_0001", None,
                                    None, "desk-1-reprint-1", None, JOB, "smudged",
                                    Delivery.PENDING, None, None, None, None, None, 0.0, 0.0),
                         None)  # fmt: skip
    states.delivered(reprint, reprint_job, "queued", "printer-a")
    states.release_held(reprint, reprint_job)
    recorded = outbox.by_job(reprint_job)
    assert recorded is not None and recorded.job_state_at_ms == T + 5


@pytest.mark.parametrize("held", [True, False], ids=["events-held", "events-after"])
def test_an_answer_newer_than_the_events_still_to_come_is_not_undone_by_them(
    outbox: Outbox, held: bool
) -> None:
    reports = Reports()
    states = JobStates(outbox, reports)
    scan = kept_scan(outbox)
    queued, leased = event(0, "queued", None, T), event(1, "leased", "queued", T + 4)
    # GIVEN a job leased by the time the submission was answered, whose events reach the
    # kiosk before the answer (held) or after it (the stream being the slower)
    if held:
        states.event(queued, queued.event_id)
        states.event(leased, leased.event_id)
    states.delivered(scan, JOB, "leased", "printer-a")
    states.release_held(scan, JOB)
    if not held:
        states.event(queued, queued.event_id)
        states.event(leased, leased.event_id)
    # WHEN the job goes on
    states.event(event(2, "printing", "leased", T + 9), None)
    # THEN the older queued event undid nothing: each state told once, in order
    assert [state for _, state in reports.told] == ["leased", "printing"]


def test_an_event_that_is_not_one_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="job_id"):
        JobChange.from_json({"id": "1-0", "state": "queued", "at": 1.0})
    with pytest.raises(ValueError, match="at must be a number"):
        JobChange.from_json({"id": "1-0", "job_id": JOB, "state": "queued", "at": "now"})
    # A state a newer coordinator adds is passed through, as the kiosk passes states
    assert JobChange.from_json({"id": "1-0", "job_id": JOB, "state": "rerouted",
                                "at": 1.5}).state == "rerouted"  # fmt: skip


# The first outbox format, as the release before job events wrote it.
SCHEMA_1 = """
CREATE TABLE scans (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, scan_id TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL CHECK (kind IN ('scan', 'reprint')), attendee_id TEXT NOT NULL,
    printer_target TEXT, priority INTEGER, idempotency_key TEXT NOT NULL UNIQUE, pdf BLOB,
    pdf_sha256 TEXT, reprint_of TEXT, reason TEXT,
    delivery TEXT NOT NULL CHECK (delivery IN ('pending', 'accepted', 'refused')),
    job_id TEXT, job_state TEXT, printer_id TEXT, error_code TEXT, error_message TEXT,
    created_at REAL NOT NULL, updated_at REAL NOT NULL
);
CREATE INDEX scans_by_delivery ON scans (delivery, job_state);
CREATE INDEX scans_by_job ON scans (job_id);
PRAGMA user_version = 1;
"""


def test_an_outbox_of_the_first_format_opens_with_its_scans(tmp_path: Path) -> None:
    # GIVEN an outbox an earlier release wrote: one job it was following
    path = tmp_path / "outbox.sqlite3"
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.executescript(SCHEMA_1)
        db.execute("INSERT INTO scans (scan_id, kind, attendee_id, idempotency_key, delivery,"
                   " job_id, job_state, created_at, updated_at) VALUES ('scan_1', 'scan',"
                   f" 'att_0001', '{KEY}', 'accepted', '{JOB}', 'queued', 1.0, 1.0)")  # fmt: skip
        db.commit()
    # WHEN this release opens it THEN the job is still followed, and events can be kept
    outbox = Outbox(path)
    try:
        [record] = outbox.unfinished_jobs()
        assert (record.job_id, record.job_state, record.job_state_at_ms) == (JOB, "queued", None)
        assert outbox.last_event_id() is None
        outbox.set_job_state("scan_1", "leased", None, T, f"{T}-0")
        assert outbox.last_event_id() == f"{T}-0"
    finally:
        outbox.close()
    with contextlib.closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 2
