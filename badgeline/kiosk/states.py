"""Where every job state the kiosk learns goes: one sink, whatever told it.

Four sources report a job's state: the deliverer (the submission's answer), the job
event stream (stream.py: each change as it happens), the poller (watch.py:
`GET /v1/jobs/{id}` while the stream is down, and once each after the stream could
not resume) and `Kiosk.status()`. They overlap and may come late: a stream that
resumes replays changes the poller already saw, and a GET answered before an event
may be handled after it. So each report carries when the job entered its state
(the coordinator's clock: an event's `at`, the last history entry of a GET), and
the sink keeps a report only if it is newer than what the outbox holds. A change is
written to the outbox, then reported to the kiosk (callbacks, wait()) under one
lock: one report per change, in the order the changes happened.

An event may come before the deliverer has recorded its job: the stream hands the
job's `queued` to the kiosk while the submission's answer is still on its way back.
Events of a scan still pending (found by the idempotency key the event carries) and
of jobs the outbox does not know (a reprint not yet answered) are held, and applied
in order once the deliverer records the job.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from badgeline.kiosk.errors import OutboxWriteError
from badgeline.kiosk.events import kiosk_event
from badgeline.kiosk.outbox import Outbox
from badgeline.kiosk.records import Delivery, ScanRecord

log = logging.getLogger("badgeline.kiosk")

# Events of jobs the outbox does not know, kept in case one turns out to be a reprint
# whose answer is on its way: most are the kiosk group's other desks' jobs.
UNKNOWN_JOBS_HELD = 1000


@dataclass(frozen=True)
class JobChange:
    """One event of GET /v1/events (badgeline.protocol.events.JobEvent): the fields the
    kiosk uses, read leniently (a state a newer coordinator adds is passed through)."""

    event_id: str
    job_id: str
    idempotency_key: str
    state: str
    previous_state: str | None
    printer_id: str | None
    at_ms: int

    @classmethod
    def from_json(cls, body: Any) -> JobChange:
        """ValueError when `body` is not an event."""
        if not isinstance(body, dict):
            raise ValueError("not an object")
        texts = {name: body.get(name) for name in ("id", "job_id", "state")}
        if not all(isinstance(value, str) and value for value in texts.values()):
            raise ValueError("id, job_id and state must be strings")
        at = body.get("at")
        if not isinstance(at, int | float) or isinstance(at, bool):
            raise ValueError("at must be a number")
        previous, printer, key = (body.get(n) for n in ("previous_state", "printer_id",
                                                         "idempotency_key"))  # fmt: skip
        return cls(
            body["id"], body["job_id"], key if isinstance(key, str) else "", body["state"],
            previous if isinstance(previous, str) else None,
            printer if isinstance(printer, str) and printer else None, round(at * 1000),
        )  # fmt: skip


@dataclass(frozen=True)
class Seen:
    """A job's state as one report tells it."""

    state: str
    printer_id: str | None
    at_ms: int | None  # when the job entered it; None when the report does not say
    # States the job was in before, within the same millisecond (an event: the state
    # it left): a report as old as the one kept is newer only if it comes from it.
    came_from: frozenset[str] = frozenset()
    source: str = "read"

    def supersedes(self, record: ScanRecord) -> bool:
        known_at = record.job_state_at_ms
        if known_at is None and self.source == "event":
            # A state the submission's answer told, without its time: an event that
            # comes after may be older (the stream can be slower than the answer), so
            # it is newer only if it leaves that state, or it is that state (its time).
            return record.job_state in (self.state, *self.came_from)
        if known_at is None or self.at_ms is None:
            return True  # a read answers the present
        if self.at_ms != known_at:
            return self.at_ms > known_at
        return self.state != record.job_state and record.job_state in self.came_from


def seen_in_answer(job: dict[str, Any]) -> Seen | None:
    """A GET /v1/jobs/{id} answer as a report: its state, when its last history entry
    says the job entered it."""
    state, printer_id = job.get("state"), job.get("printer_id")
    if not isinstance(state, str):
        return None
    history = [e for e in job.get("history") or [] if _entry(e)]
    if not history:
        return Seen(state, printer_id if isinstance(printer_id, str) else None, None)
    at_ms = round(history[-1]["at"] * 1000)
    came_from = frozenset(e["to"] for e in history[:-1] if round(e["at"] * 1000) == at_ms)
    return Seen(state, printer_id if isinstance(printer_id, str) else None, at_ms, came_from)


def _entry(entry: object) -> bool:
    """A history entry with the time and state the sink compares."""
    if not isinstance(entry, dict) or not isinstance(entry.get("to"), str):
        return False
    at = entry.get("at")
    return isinstance(at, int | float) and not isinstance(at, bool)


def seen_in_event(change: JobChange) -> Seen:
    came_from = frozenset({change.previous_state}) if change.previous_state else frozenset()
    return Seen(change.state, change.printer_id, change.at_ms, came_from, "event")


class JobStates:
    """The sink: a job's state as last seen, kept in the outbox; a change is reported."""

    def __init__(self, outbox: Outbox, changed: Callable[[ScanRecord], None]) -> None:
        self._outbox = outbox
        self._changed = changed  # the kiosk's: wakes wait(), queues the callbacks
        self._lock = threading.Lock()
        self._held_for_scan: dict[str, list[JobChange]] = {}  # by idempotency key
        self._unknown_jobs: deque[JobChange] = deque(maxlen=UNKNOWN_JOBS_HELD)

    # ------------------------------------------------------------ the deliverer

    def delivered(self, record: ScanRecord, job_id: str, state: str,
                  printer_id: str | None) -> None:  # fmt: skip
        """The coordinator accepted the scan (OutboxWriteError: not recorded)."""
        with self._lock:
            self._outbox.mark_accepted(record.scan_id, job_id, state, printer_id)
            self._changed(self._outbox.get(record.scan_id) or record)

    def release_held(self, record: ScanRecord, job_id: str) -> None:
        """Apply the events that came before the deliverer recorded the job, in order."""
        with self._lock:
            self._release(record.idempotency_key, job_id)

    def _release(self, idempotency_key: str, job_id: str) -> None:
        held = self._held_for_scan.pop(idempotency_key, [])
        held += [change for change in self._unknown_jobs if change.job_id == job_id]
        if not held:
            return
        self._unknown_jobs = deque((c for c in self._unknown_jobs if c.job_id != job_id),
                                   maxlen=UNKNOWN_JOBS_HELD)  # fmt: skip
        for change in sorted(held, key=_stream_order):
            self._apply(job_id, seen_in_event(change))

    # ------------------------------------------------------------ the sources

    def event(self, change: JobChange, position: str | None) -> bool:
        """One event of the stream; True when it was written with `position` (the
        stream's place after it) in the same commit."""
        with self._lock:
            record = self._outbox.by_job(change.job_id)
            if record is None:
                pending = self._outbox.by_key(change.idempotency_key) if \
                    change.idempotency_key else None  # fmt: skip
                if pending is not None and pending.delivery is Delivery.PENDING:
                    self._held_for_scan.setdefault(pending.idempotency_key, []).append(change)
                    log.debug("job_event_held scan_id=%s job_id=%s state=%s", pending.scan_id,
                              change.job_id, change.state)  # fmt: skip
                else:
                    self._unknown_jobs.append(change)
                return False
            self._release(record.idempotency_key, change.job_id)  # anything older first
            return self._apply(change.job_id, seen_in_event(change), position)

    def answered(self, job_id: str, job: dict[str, Any], source: str = "read") -> None:
        """The coordinator's answer to GET /v1/jobs/{job_id}."""
        seen = seen_in_answer(job)
        if seen is None:
            return
        with self._lock:
            self._apply(job_id, Seen(seen.state, seen.printer_id, seen.at_ms,
                                     seen.came_from, source))  # fmt: skip

    def _apply(self, job_id: str, seen: Seen, position: str | None = None) -> bool:
        record = self._outbox.by_job(job_id)
        if record is None or not seen.supersedes(record):
            return False
        now = (seen.state, seen.printer_id or record.printer_id, seen.at_ms)
        if now == (record.job_state, record.printer_id, record.job_state_at_ms):
            return False
        try:
            self._outbox.set_job_state(record.scan_id, seen.state, seen.printer_id,
                                       seen.at_ms, position)  # fmt: skip
        except OutboxWriteError as error:  # read again at the next poll or reconnect
            kiosk_event("outbox_write_failed", logging.ERROR, scan_id=record.scan_id,
                        job_id=job_id, error=str(error))  # fmt: skip
            return False
        if seen.state != record.job_state:
            kiosk_event("job_state_changed", scan_id=record.scan_id, job_id=job_id,
                        previous=record.job_state, state=seen.state,
                        printer_id=seen.printer_id, source=seen.source)  # fmt: skip
            self._changed(self._outbox.get(record.scan_id) or record)
        return position is not None


def _stream_order(change: JobChange) -> tuple[int, ...]:
    return tuple(int(part) for part in change.event_id.split("-", 1) if part.isdigit())
