"""`Kiosk`: keep every scan durably, deliver it once, follow its job, reprint on purpose.

    kiosk = Kiosk(coordinator_urls=["https://venue:8420"], token=..., outbox_path=...)
    ticket = kiosk.submit("att_44817", pdf_bytes, "pool:hall-a")   # durable when it returns
    kiosk.wait(ticket, timeout_s=30).printed

Four threads of its own: the deliverer (delivery.py), the follower of the job event
stream (stream.py), the job state poller for when that stream is down (watch.py), and
the notifier, which runs the integrator's callbacks so that a slow callback never
holds a delivery up. docs/kiosk.md is the integrator's guide.
"""

from __future__ import annotations

import dataclasses
import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from badgeline.kiosk.client import CoordinatorAway, CoordinatorClient, Replicas, ssl_context
from badgeline.kiosk.config import KioskSettings
from badgeline.kiosk.delivery import Deliverer
from badgeline.kiosk.errors import (
    KioskError,
    OutboxWriteError,
    UnknownScan,
)
from badgeline.kiosk.events import kiosk_event
from badgeline.kiosk.outbox import Outbox
from badgeline.kiosk.records import Delivery, ScanRecord, ScanStatus, ScanTicket
from badgeline.kiosk.salvage import SalvageReport
from badgeline.kiosk.scans import (
    PdfSource,
    Which,
    job_to_reprint,
    name,
    new_reprint,
    new_scan,
    read_pdf,
    status_of_job,
)
from badgeline.kiosk.states import JobStates
from badgeline.kiosk.stream import JobEventStream
from badgeline.kiosk.watch import JobStatePoller
from badgeline.protocol.ids import is_job_id

log = logging.getLogger("badgeline.kiosk")

Callback = Callable[[ScanStatus], None]


class Kiosk:
    """One kiosk's outbox and delivery. Thread-safe: submit from any thread."""

    def __init__(self, settings: KioskSettings | None = None, /, **options: Any) -> None:
        if settings is not None and options:
            raise TypeError("give a KioskSettings or keyword options, not both")
        self.settings = settings or KioskSettings(**options)
        s = self.settings
        self._outbox = Outbox(s.outbox_path, salvage=s.on_corrupt_outbox == "salvage")
        self._closed = False
        self._changes = threading.Condition()
        self._callbacks: list[Callback] = []
        self._notices: queue.SimpleQueue[ScanStatus | None] = queue.SimpleQueue()
        try:
            self._forget_finished()
            self._replicas = Replicas(s.coordinator_urls)
            self._discovery = _start_discovery(s, self._replicas) if s.discover else None
            self._states = JobStates(self._outbox, self._changed)
            self._deliverer = Deliverer(s, self._outbox, self._client(), self._states,
                                        self._changed)  # fmt: skip
            deliverer = self._deliverer
            self._poller = JobStatePoller(
                self._outbox, self._client(), self._states, s.poll_interval_s,
                may_poll=lambda: deliverer.idle.is_set() and not deliverer.held(),
                rate_limited=deliverer.hold, following=self._following,
            )  # fmt: skip
            self._stream = JobEventStream(s, self._client(), self._outbox, self._states,
                                          reread=self._poller.reread) if s.follow_events \
                else None  # fmt: skip
            self._status_client = self._client()
            self._status_lock = threading.Lock()
            self._notifier = threading.Thread(target=self._notify, daemon=True,
                                              name="badgeline-kiosk-callbacks")  # fmt: skip
        except BaseException:
            self._outbox.close()
            raise
        for thread in self._threads():
            thread.start()
        kiosk_event("kiosk_started", outbox=str(s.outbox_path),
                    undelivered=self._outbox.count_pending(),
                    coordinators=",".join(s.coordinator_urls), discover=s.discover)  # fmt: skip

    def _client(self) -> CoordinatorClient:
        s = self.settings
        https = s.ca_file is not None or any(u.startswith("https:") for u in s.coordinator_urls)
        return CoordinatorClient(
            self._replicas, s.token, tls=ssl_context(s.ca_file) if https or s.discover else None,
            connect_timeout_s=s.connect_timeout_s, request_timeout_s=s.request_timeout_s,
        )  # fmt: skip

    # ------------------------------------------------------------ scans in

    def submit(
        self, attendee_id: str, pdf: PdfSource, printer_target: str, priority: int = 100
    ) -> ScanTicket:
        """Keep the scan in the outbox, fsynced, and return its ticket; deliver it after.

        Raises ScanInvalid (fix the input), OutboxWriteError (the scan was not kept:
        disk full or failing), KioskError once closed.
        """
        self._check_open()
        data = read_pdf(pdf, self.settings.max_pdf_bytes)
        record = new_scan(self.settings.key_prefix, attendee_id, data, printer_target, priority)
        saved = self._keep(record, data, f"the scan of {record.attendee_id}")
        kiosk_event("scan_kept", scan_id=saved.scan_id, attendee_id=saved.attendee_id,
                    printer_target=saved.printer_target,
                    idempotency_key=saved.idempotency_key)  # fmt: skip
        self._deliverer.wake()
        return saved.ticket()

    def reprint(
        self, which: Which, reason: str, *, printer_target: str | None = None,
        priority: int | None = None,
    ) -> ScanTicket:  # fmt: skip
        """Ask for a second badge of a delivered scan's job: the deliberate, logged action.

        Kept in the outbox like a scan and delivered as the coordinator's reprint
        (`POST /v1/jobs/{job_id}/reprint`) under a request id made now, never the scan's
        key: each call is one more badge, however often its delivery is retried.
        """
        self._check_open()
        original = self._find(which)
        job_id = job_to_reprint(which, original)
        attendee = original.attendee_id if original else self._attendee_of(job_id)
        record = new_reprint(self.settings.key_prefix, job_id, attendee, reason, printer_target,
                             priority)  # fmt: skip
        saved = self._keep(record, None, f"the reprint of {job_id}")
        kiosk_event("reprint_requested", logging.WARNING, scan_id=saved.scan_id,
                    reprint_of=job_id, reason=record.reason, request_id=record.idempotency_key,
                    of_scan=original.scan_id if original else None)  # fmt: skip
        self._deliverer.wake()
        return saved.ticket()

    # ------------------------------------------------------------ where scans are

    def status(self, which: Which, *, refresh: bool = True) -> ScanStatus:
        """A scan's status from the outbox; with `refresh`, its job read from the
        coordinator now (its answer in `job`). A job id this outbox does not hold is
        read from the coordinator alone. The coordinator away: the last state known."""
        self._check_open()
        record = self._find(which)
        job_id = record.job_id if record else which if isinstance(which, str) else None
        if record is None and not (job_id and is_job_id(job_id)):
            raise UnknownScan(f"no scan {name(which)} in the outbox {self.settings.outbox_path}")
        job = self._read_job(job_id) if refresh and job_id else None
        if record is None:
            if job is None:
                raise UnknownScan(f"no job {job_id} here nor at the coordinator")
            return status_of_job(job)
        if job is not None and job_id:
            self._states.answered(job_id, job)
            record = self._outbox.get(record.scan_id) or record
        status = record.status(job)
        postponed = self._deliverer.postponed.get(record.scan_id)
        if status.delivery is Delivery.PENDING and postponed is not None:
            status = dataclasses.replace(status, error_code=postponed[0],
                                         error_message=postponed[1])  # fmt: skip
        return status

    def wait(
        self, which: Which, timeout_s: float | None = None,
        until: Callable[[ScanStatus], bool] = lambda status: status.finished,
    ) -> ScanStatus:  # fmt: skip
        """Block until `until(status)` (by default: the scan has finished); TimeoutError."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with self._changes:
            while True:
                status = self.status(which, refresh=False)
                if until(status):
                    return status
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    state = status.job_state or status.delivery.value
                    raise TimeoutError(f"{name(which)} is still {state}")
                self._changes.wait(remaining if remaining is not None else 1.0)

    def flush(self, timeout_s: float | None = None) -> bool:
        """Wait until every scan in the outbox has been delivered (accepted or refused);
        False if some were still undelivered after `timeout_s`."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with self._changes:
            while self._outbox.count_pending():
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._changes.wait(remaining if remaining is not None else 1.0)
        return True

    def on_change(self, callback: Callback) -> Callback:
        """Call `callback(status)` when a scan is delivered or refused and when its job
        changes state; on the kiosk's own thread, one call at a time, in order."""
        self._callbacks.append(callback)
        return callback

    @property
    def undelivered(self) -> int:
        return self._outbox.count_pending()

    @property
    def salvage(self) -> SalvageReport | None:
        """What was carried out of a damaged outbox at open (on_corrupt_outbox='salvage')."""
        return self._outbox.salvage

    @property
    def last_delivery_error(self) -> str | None:
        """Why the latest delivery attempt did not get through; None once one does."""
        return self._deliverer.last_error

    def scans(self) -> list[ScanStatus]:
        """Every scan the outbox holds, oldest first."""
        return [record.status() for record in self._outbox.all()]

    # ------------------------------------------------------------ closing

    def close(self) -> None:
        """Stop delivering and close the outbox. Scans not yet delivered stay in it and
        go out with the next Kiosk on the same outbox; call flush() first to wait for them."""
        if self._closed:
            return
        self._closed = True
        self._deliverer.stop()
        self._poller.stop()
        if self._stream is not None:
            self._stream.stop()
        self._notices.put(None)
        if self._discovery is not None:
            self._discovery.stop()
        join_s = self.settings.request_timeout_s + self.settings.connect_timeout_s + 1
        for thread in self._threads():
            if thread is not threading.current_thread():  # close() from a callback
                thread.join(join_s)
        self._status_client.close()
        self._outbox.close()
        with self._changes:
            self._changes.notify_all()

    def __enter__(self) -> Kiosk:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # ------------------------------------------------------------ inside

    def _threads(self) -> list[threading.Thread]:
        threads: list[threading.Thread] = [self._deliverer, self._poller, self._notifier]
        return threads + ([self._stream] if self._stream is not None else [])

    def _following(self) -> bool:
        """The job event stream is up: job states come from it, not from polling."""
        return self._stream is not None and self._stream.up.is_set()

    def _check_open(self) -> None:
        if self._closed:
            raise KioskError("this Kiosk is closed: make a new one on the same outbox")

    def _forget_finished(self) -> None:
        try:
            forgotten = self._outbox.forget_finished(time.time() - self.settings.keep_finished_s)
        except OutboxWriteError as error:  # a full disk must not keep the kiosk from starting
            kiosk_event("outbox_write_failed", logging.ERROR, error=str(error))
            return
        if forgotten:
            kiosk_event("finished_scans_forgotten", scans=forgotten)

    def _keep(self, record: ScanRecord, pdf: bytes | None, what: str) -> ScanRecord:
        try:
            return self._outbox.add(record, pdf)
        except OutboxWriteError as error:
            raise OutboxWriteError(
                f"{what} was NOT kept: {error}. Scans acknowledged before are safe in the "
                "outbox; free space (or fix the disk), then submit it again"
            ) from error

    def _changed(self, record: ScanRecord) -> None:
        """A scan's delivery or job state changed; `record` is the scan just after the
        change (the callbacks get each change, however quickly the next one follows)."""
        with self._changes:
            self._changes.notify_all()
        if self._callbacks:
            self._notices.put(record.status())

    def _notify(self) -> None:
        while (status := self._notices.get()) is not None:
            for callback in list(self._callbacks):
                try:
                    callback(status)
                except Exception:  # the integrator's bug must not stop the others' calls
                    log.exception("a kiosk on_change callback failed for %s", status.scan_id)

    def _find(self, which: Which) -> ScanRecord | None:
        scan_id = which.scan_id if isinstance(which, ScanTicket | ScanStatus) else which
        if not isinstance(scan_id, str):
            return None
        if is_job_id(scan_id):
            return self._outbox.by_job(scan_id)
        return self._outbox.get(scan_id)

    def _attendee_of(self, job_id: str) -> str:
        """The attendee of a job the outbox has forgotten, as the coordinator has it."""
        job = self._read_job(job_id)
        attendee = job.get("attendee_id") if job else None
        return attendee if isinstance(attendee, str) and attendee else "unknown"

    def _read_job(self, job_id: str) -> dict[str, Any] | None:
        with self._status_lock:
            try:
                answer = self._status_client.call("GET", f"/v1/jobs/{job_id}")
            except CoordinatorAway:
                return None
        return answer.body if answer.status == 200 and isinstance(answer.body, dict) else None


def _start_discovery(settings: KioskSettings, replicas: Replicas) -> Any:
    from badgeline.kiosk.discovery import MdnsDiscovery

    discovery = MdnsDiscovery(replicas, settings.venue, settings.mdns_interfaces)
    discovery.start()
    return discovery
