"""Following each delivered scan's job until it ends, and telling the kiosk of each change.

Job states come from a source and go to one sink (`JobStates.observed`), which
writes a new state to the outbox and reports the change. The source today polls
`GET /v1/jobs/{id}` for every job not yet finished, every `poll_interval_s`;
a source reading the coordinator's job event stream would call the same sink,
and nothing else here would change.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from badgeline.kiosk.client import CoordinatorAway, CoordinatorClient
from badgeline.kiosk.errors import OutboxWriteError
from badgeline.kiosk.events import kiosk_event
from badgeline.kiosk.outbox import Outbox

log = logging.getLogger("badgeline.kiosk")


class JobStates:
    """The sink: a job's state as last seen, kept in the outbox; a change is reported."""

    def __init__(self, outbox: Outbox, changed: Callable[[str], None]) -> None:
        self._outbox = outbox
        self._changed = changed
        self._lock = threading.Lock()  # the poller and status() may report the same change

    def observed(self, job_id: str, job: dict[str, Any]) -> None:
        state, printer_id = job.get("state"), job.get("printer_id")
        if not isinstance(state, str):
            return
        with self._lock:
            record = self._outbox.by_job(job_id)
            if record is None or (record.job_state, record.printer_id) == (state, printer_id):
                return
            try:
                self._outbox.set_job_state(record.scan_id, state, printer_id)
            except OutboxWriteError as error:  # seen again at the next poll
                kiosk_event("outbox_write_failed", logging.ERROR, scan_id=record.scan_id,
                            job_id=job_id, error=str(error))  # fmt: skip
                return
        if state != record.job_state:
            kiosk_event("job_state_changed", scan_id=record.scan_id, job_id=job_id,
                        previous=record.job_state, state=state, printer_id=printer_id)  # fmt: skip
            self._changed(record.scan_id)


class JobStatePoller(threading.Thread):
    """The polling source: every unfinished job of the outbox, read every interval."""

    def __init__(
        self, outbox: Outbox, client: CoordinatorClient, states: JobStates, interval_s: float,
        *, may_poll: Callable[[], bool], rate_limited: Callable[[float], None],
    ) -> None:  # fmt: skip
        super().__init__(name="badgeline-kiosk-job-states", daemon=True)
        self._outbox = outbox
        self._client = client
        self._states = states
        self._interval_s = interval_s
        # Deliveries first: a kiosk's calls share its rate limit at the coordinator, so
        # states are read only while no delivery is due, and not while told to wait.
        self._may_poll = may_poll
        self._rate_limited = rate_limited
        self._stopping = threading.Event()
        self._gone: set[str] = set()  # jobs the coordinator no longer shows this kiosk

    def stop(self) -> None:
        self._stopping.set()

    def run(self) -> None:
        try:
            while not self._stopping.wait(self._interval_s):
                try:
                    self._poll_once()
                except CoordinatorAway:
                    continue  # the deliverer says so in the log; the states wait
                except Exception:  # a bug or a strange answer must not end the following
                    log.exception("reading job states failed")
        finally:
            self._client.close()

    def _poll_once(self) -> None:
        for record in self._outbox.unfinished_jobs():
            if self._stopping.is_set() or not self._may_poll():
                return
            job_id = record.job_id
            if job_id is None or job_id in self._gone:
                continue
            answer = self._client.call("GET", f"/v1/jobs/{job_id}")
            if answer.status == 429:
                self._rate_limited(answer.retry_after_s or self._interval_s)
                return
            if answer.status == 200 and isinstance(answer.body, dict):
                self._states.observed(job_id, answer.body)
            elif answer.status == 404:
                # Left the coordinator after its retention (days): the last state stays.
                self._gone.add(job_id)
                kiosk_event("job_gone", logging.WARNING, scan_id=record.scan_id, job_id=job_id,
                            last_state=record.job_state)  # fmt: skip
