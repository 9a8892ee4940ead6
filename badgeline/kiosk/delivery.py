"""Deliver each scan once: upload its PDF, submit its job, under the key it was given.

One thread takes the outbox's undelivered scans in the order they were made. A
scan ends in one of two ways: the coordinator accepts it (201, or 200 for a key
it already holds: an earlier attempt got through and its answer was lost), or
refuses it for good (a 4xx that the same request would get again: a badge rule,
an unknown printer, a bad token) and the scan is marked refused with the reason.
Everything else is "not now": the coordinator away (each URL tried in turn),
429, 503 (`Retry-After` honoured), 5xx, 408. Then the scan stays pending and is
tried again with the same key, after a back-off that doubles up to retry_max_s.
A refusal for the whole kiosk (the coordinator away, 429, `store_unavailable`,
500, 502, 504) holds every scan back; one for this scan alone (`queue_full`,
`no_printer_available`, `badge_check_unavailable`, 408) lets later scans go ahead.
"""

from __future__ import annotations

import hashlib
import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from badgeline.kiosk.client import Answer, CoordinatorAway, CoordinatorClient
from badgeline.kiosk.config import KioskSettings
from badgeline.kiosk.errors import OutboxWriteError
from badgeline.kiosk.events import kiosk_event
from badgeline.kiosk.outbox import Outbox
from badgeline.kiosk.records import Kind, ScanRecord
from badgeline.kiosk.states import JobStates

log = logging.getLogger("badgeline.kiosk")

RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})
# Refusals that say nothing about this scan: every scan would get them now.
WHOLE_KIOSK_STATUSES = frozenset({429, 500, 502, 504})
WHOLE_KIOSK_CODES = frozenset({"store_unavailable"})


@dataclass
class Backoff:
    """Attempts so far and when the next may go, for one scan or for the whole kiosk."""

    failures: int = 0
    not_before: float = 0.0

    def fail(self, settings: KioskSettings, now: float, retry_after_s: float | None) -> float:
        self.failures += 1
        delay = min(settings.retry_max_s, settings.retry_base_s * 2 ** (self.failures - 1))
        delay *= random.uniform(0.8, 1.2)  # kiosks that lost the coordinator together spread
        if retry_after_s is not None:
            delay = retry_after_s
        self.not_before = now + delay
        return delay


class Deliverer(threading.Thread):
    def __init__(
        self, settings: KioskSettings, outbox: Outbox, client: CoordinatorClient,
        states: JobStates, changed: Callable[[ScanRecord], None],
    ) -> None:  # fmt: skip
        super().__init__(name="badgeline-kiosk-deliverer", daemon=True)
        self._settings = settings
        self._outbox = outbox
        self._client = client
        self._states = states  # records an acceptance, as every job state, in one place
        self._changed = changed  # told of a refusal
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._kiosk_wide = Backoff()
        self._per_scan: dict[str, Backoff] = {}
        self.last_error: str | None = None
        # Why each undelivered scan's latest attempt did not get through: (code, message).
        self.postponed: dict[str, tuple[str, str]] = {}
        # Set while no undelivered scan is due: reading job states may use the kiosk's
        # share of the coordinator (its rate limit) without holding a delivery up.
        self.idle = threading.Event()

    def wake(self) -> None:
        self.idle.clear()
        self._wake.set()

    def held(self) -> bool:
        """True while every call waits (the coordinator away, or the kiosk over its rate)."""
        return time.monotonic() < self._kiosk_wide.not_before

    def hold(self, seconds: float) -> None:
        """Another thread of the kiosk was told to wait (429): deliveries wait too."""
        self._kiosk_wide.not_before = max(self._kiosk_wide.not_before, time.monotonic() + seconds)

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()

    def run(self) -> None:
        try:
            while not self._stopping.is_set():
                self._wake.clear()
                pause = self._deliver_due()
                if pause > 0:
                    self.idle.set()
                    self._wake.wait(pause)
                    self.idle.clear()
        finally:
            self._client.close()

    def _deliver_due(self) -> float:
        """Deliver what is due; how long to wait before looking again."""
        now = time.monotonic()
        if now < self._kiosk_wide.not_before:
            return self._kiosk_wide.not_before - now
        try:
            pending = self._outbox.pending()
        except Exception as error:  # a read error must not end delivery
            kiosk_event("outbox_read_failed", logging.ERROR, error=str(error))
            return self._settings.retry_max_s
        waits = [60.0]
        for record in pending:
            if self._stopping.is_set():
                return 0
            own = self._per_scan.get(record.scan_id)
            if own is not None and now < own.not_before:
                waits.append(own.not_before - now)
                continue
            try:
                delivered = self._deliver(record)
            except Exception:  # a bug or a strange answer must not end delivery
                log.exception("delivery of scan %s failed", record.scan_id)
                self._per_scan[record.scan_id] = Backoff(1, now + self._settings.retry_max_s)
                continue
            if not delivered:
                return max(0.0, self._kiosk_wide.not_before - time.monotonic())
            now = time.monotonic()
        # Keep each waiting scan's count of failures (its back-off goes on doubling); forget
        # those of scans no longer pending.
        waiting = {record.scan_id for record in pending}
        self._per_scan = {s: b for s, b in self._per_scan.items() if s in waiting}
        return min(waits)

    def _deliver(self, record: ScanRecord) -> bool:
        """One attempt at one scan; False when the whole kiosk must wait."""
        try:
            answer = self._attempt(record)
        except CoordinatorAway as away:
            delay = self._kiosk_wide.fail(self._settings, time.monotonic(), None)
            self._note("coordinator_away", record, f"no coordinator answered: {away}", delay)
            return False
        if 200 <= answer.status < 300:
            self._kiosk_wide = Backoff()
            self._per_scan.pop(record.scan_id, None)
            self._accepted(record, answer)
            return True
        if answer.status in RETRY_STATUSES:
            kiosk_wide = (answer.status in WHOLE_KIOSK_STATUSES
                          or answer.error_code in WHOLE_KIOSK_CODES)  # fmt: skip
            backoff = self._kiosk_wide if kiosk_wide else self._per_scan.setdefault(
                record.scan_id, Backoff())  # fmt: skip
            delay = backoff.fail(self._settings, time.monotonic(), answer.retry_after_s)
            self._note(answer.error_code, record, answer.error_message, delay)
            return not kiosk_wide
        self._kiosk_wide = Backoff()
        self._refused(record, answer)
        return True

    def _attempt(self, record: ScanRecord) -> Answer:
        if record.kind is Kind.REPRINT:
            body: dict[str, object] = {
                "reason": record.reason,
                "request_id": record.idempotency_key,
            }
            if record.printer_target is not None:
                body["printer_target"] = record.printer_target
            if record.priority is not None:
                body["priority"] = record.priority
            return self._client.call("POST", f"/v1/jobs/{record.reprint_of}/reprint", body)
        pdf = self._outbox.pdf(record.scan_id)
        if pdf is None or hashlib.sha256(pdf).hexdigest() != record.pdf_sha256:
            return Answer(0, {"error": {"code": "pdf_lost", "message": (
                "the outbox no longer holds this scan's PDF as it was submitted: "
                "submit the badge again")}}, None, "outbox")  # fmt: skip
        uploaded = self._client.call("PUT", f"/v1/artifacts/{record.pdf_sha256}.pdf", pdf,
                                     content_type="application/pdf")  # fmt: skip
        if uploaded.status >= 300:
            return uploaded
        if not isinstance(uploaded.body, dict) or not isinstance(uploaded.body.get("ref"), str):
            return Answer(502, None, None, uploaded.url)  # not the coordinator's answer: again
        job = {"attendee_id": record.attendee_id, "badge_pdf_ref": uploaded.body["ref"],
               "printer_target": record.printer_target, "priority": record.priority,
               "idempotency_key": record.idempotency_key}  # fmt: skip
        return self._client.call("POST", "/v1/jobs", job)

    def _accepted(self, record: ScanRecord, answer: Answer) -> None:
        body = answer.body if isinstance(answer.body, dict) else {}
        if not isinstance(body.get("job_id"), str) or not isinstance(body.get("state"), str):
            raise ValueError(f"an answer {answer.status} without a job: {answer.body!r}")
        job_id, state, printer_id = body["job_id"], body["state"], body.get("printer_id")
        try:
            self._states.delivered(record, job_id, state, printer_id)
        except OutboxWriteError as error:
            # The job is the coordinator's now; the next attempt, under the same key, is
            # answered 200 with this job: nothing prints twice while the disk is full.
            self._per_scan[record.scan_id] = Backoff(
                1, time.monotonic() + self._settings.retry_max_s
            )
            kiosk_event("outbox_write_failed", logging.ERROR, scan_id=record.scan_id,
                        job_id=job_id, error=str(error))  # fmt: skip
            return
        self.last_error = None
        self.postponed.pop(record.scan_id, None)
        kiosk_event("scan_delivered", scan_id=record.scan_id, kind=record.kind.value,
                    job_id=job_id, state=state, printer_id=printer_id,
                    idempotency_key=record.idempotency_key,
                    duplicate=bool(body.get("duplicate", answer.status == 200)))  # fmt: skip
        # The job's events that came before this answer (the job stream may be quicker).
        self._states.release_held(record, job_id)

    def _refused(self, record: ScanRecord, answer: Answer) -> None:
        try:
            self._outbox.mark_refused(record.scan_id, answer.error_code, answer.error_message)
        except OutboxWriteError as error:
            self._per_scan[record.scan_id] = Backoff(
                1, time.monotonic() + self._settings.retry_max_s
            )
            kiosk_event("outbox_write_failed", logging.ERROR, scan_id=record.scan_id,
                        error=str(error))  # fmt: skip
            return
        self.postponed.pop(record.scan_id, None)
        kiosk_event("scan_refused", logging.ERROR, scan_id=record.scan_id,
                    kind=record.kind.value, status=answer.status, code=answer.error_code,
                    reason=answer.error_message,
                    idempotency_key=record.idempotency_key)  # fmt: skip
        self._changed(self._outbox.get(record.scan_id) or record)

    def _later(self, record: ScanRecord) -> None:
        """Try this scan again after the longest back-off (its outbox write failed)."""
        self._per_scan[record.scan_id] = Backoff(1, time.monotonic() + self._settings.retry_max_s)

    def _note(self, code: str, record: ScanRecord, message: str, delay: float) -> None:
        self.last_error = f"{code}: {message}"
        self.postponed[record.scan_id] = (code, message)
        kiosk_event("delivery_postponed", logging.WARNING, scan_id=record.scan_id, code=code,
                    reason=message, retry_in_s=round(delay, 2))  # fmt: skip
