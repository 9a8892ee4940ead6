"""Reading job states with `GET /v1/jobs/{id}`: the fallback of the job event stream.

The kiosk learns its jobs' states from the coordinator's event stream (stream.py).
While that stream is not up (the coordinator away, a replica without it, a drop
before the reconnect), this thread reads every job not yet finished, once every
`poll_interval_s`, as the kiosk did before the stream; it stops once the stream is
back. It also reads, once each, the jobs the stream asks it to (`reread`): after
the stream could not resume from its last id, or never had one. What it reads goes
to the same sink as the events (states.py), which keeps only what is newer.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from badgeline.kiosk.client import CoordinatorAway, CoordinatorClient
from badgeline.kiosk.events import kiosk_event
from badgeline.kiosk.outbox import Outbox
from badgeline.kiosk.records import ScanRecord
from badgeline.kiosk.states import JobStates

log = logging.getLogger("badgeline.kiosk")


class JobStatePoller(threading.Thread):
    """The polling source: every unfinished job of the outbox, read every interval."""

    def __init__(
        self, outbox: Outbox, client: CoordinatorClient, states: JobStates, interval_s: float,
        *, may_poll: Callable[[], bool], rate_limited: Callable[[float], None],
        following: Callable[[], bool] = lambda: False,
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
        self._following = following  # the event stream is up: nothing to poll
        self._stopping = threading.Event()
        self._wake = threading.Event()
        self._to_reread: dict[str, None] = {}  # job ids, in the order asked
        self._reread_lock = threading.Lock()
        self._gone: set[str] = set()  # jobs the coordinator no longer shows this kiosk

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()

    def reread(self, job_ids: list[str]) -> None:
        """Read each of these jobs once, soon, whether the stream is up or not."""
        with self._reread_lock:
            self._to_reread.update(dict.fromkeys(job_ids))
        self._wake.set()

    def run(self) -> None:
        try:
            while True:
                self._wake.wait(self._interval_s)
                self._wake.clear()
                if self._stopping.is_set():
                    return
                try:
                    self._reread_asked()
                    if not self._following():
                        self._poll_once()
                except CoordinatorAway:
                    continue  # the deliverer says so in the log; the states wait
                except Exception:  # a bug or a strange answer must not end the following
                    log.exception("reading job states failed")
        finally:
            self._client.close()

    def _reread_asked(self) -> None:
        with self._reread_lock:
            asked = list(self._to_reread)
        for job_id in asked:
            record = self._outbox.by_job(job_id)
            if record is not None and job_id not in self._gone:
                if self._stopping.is_set() or not self._may_poll():
                    return
                status = self._read(record, job_id, "reread")
                if status == 429:
                    return
                if status not in (200, 404):
                    continue  # not read: asked again at the next round
            with self._reread_lock:
                self._to_reread.pop(job_id, None)

    def _poll_once(self) -> None:
        for record in self._outbox.unfinished_jobs():
            if self._stopping.is_set() or not self._may_poll() or self._following():
                return
            job_id = record.job_id
            if job_id is None or job_id in self._gone:
                continue
            if self._read(record, job_id, "poll") == 429:
                return

    def _read(self, record: ScanRecord, job_id: str, source: str) -> int:
        """One GET of the job, its answer given to the sink; the answer's status."""
        answer = self._client.call("GET", f"/v1/jobs/{job_id}")
        if answer.status == 429:
            self._rate_limited(answer.retry_after_s or self._interval_s)
        elif answer.status == 200 and isinstance(answer.body, dict):
            self._states.answered(job_id, answer.body, source)
        elif answer.status == 404:
            # Left the coordinator after its retention (days): the last state stays.
            self._gone.add(job_id)
            kiosk_event("job_gone", logging.WARNING, scan_id=record.scan_id, job_id=job_id,
                        last_state=record.job_state)  # fmt: skip
        return answer.status
