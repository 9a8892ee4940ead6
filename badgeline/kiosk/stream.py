"""Following the coordinator's job event stream: each job's changes as they happen.

One thread holds one `GET /v1/events` (docs/api.md, "Job events") on a connection of
its own, with the kiosk's token, TLS settings and replicas (each URL in turn), and
hands each `event: job` to the job state sink (states.py), which keeps it in the
outbox and reports the change. The kiosk token sees its own jobs and its group's.

Where it is in the stream (the last event id) is kept in the outbox: with the event
that changed a scan, in the same commit; at once for a record without data (the
`: connected` mark, a keep-alive that moves the id past other desks' events); else
with the first record a second after the last save, and when the stream ends. A
kiosk that dies in between resumes a little earlier: the events it gets again are
reports the sink already holds. A stream that drops, a coordinator that restarts and
a kiosk that restarts all reconnect with `Last-Event-ID`, and the coordinator sends
every event after it, none missed.
An id the coordinator cannot resume from is `410 event_id_gone`: the kiosk forgets
it, reconnects without one, and once connected has each unfinished job read once
(`GET /v1/jobs/{id}`, by the poller), so what happened in between is not lost. A
kiosk that never had an id (a new outbox) starts the same way.

While the stream is not up (`up` clear) the poller reads job states as before; it
stops once the stream is back. A stream ends after `event_stream_idle_s` without a
byte (the coordinator sends a keep-alive every 15 s), and reconnects after the
`retry` the coordinator asks for, at most `retry_max_s`; a stream that cannot be
opened is tried again after the deliverer's back-off (or a longer `Retry-After`).
"""

from __future__ import annotations

import http.client
import json
import logging
import threading
import time
from collections.abc import Callable

from badgeline.kiosk.client import (
    CoordinatorAway,
    CoordinatorClient,
    Stream,
    json_body,
    retry_after_s,
)
from badgeline.kiosk.config import KioskSettings
from badgeline.kiosk.delivery import Backoff
from badgeline.kiosk.errors import OutboxWriteError
from badgeline.kiosk.events import kiosk_event
from badgeline.kiosk.outbox import Outbox
from badgeline.kiosk.sse import Dispatch, EventStreamParser
from badgeline.kiosk.states import JobChange, JobStates

log = logging.getLogger("badgeline.kiosk")

EVENTS_PATH = "/v1/events"
MAX_LINE_BYTES = 64 * 1024  # an event's data is well under 1 KiB
POSITION_SAVE_S = 1.0
# A coordinator without the route (a release before job events): poll, and look again
# now and then (a rolling upgrade brings it).
NO_STREAM_RETRY_S = 60.0


class JobEventStream(threading.Thread):
    def __init__(
        self, settings: KioskSettings, client: CoordinatorClient, outbox: Outbox,
        states: JobStates, *, reread: Callable[[list[str]], None],
    ) -> None:  # fmt: skip
        super().__init__(name="badgeline-kiosk-job-events", daemon=True)
        self._settings = settings
        self._client = client
        self._outbox = outbox
        self._states = states
        self._reread = reread  # has each of these jobs read once (the poller)
        self.up = threading.Event()  # set while a stream is open: no polling then
        self._stopping = threading.Event()
        self._open: Stream | None = None
        self._open_lock = threading.Lock()
        self._position = outbox.last_event_id()
        self._saved, self._saved_at = self._position, time.monotonic()
        self._reconnect_s = settings.retry_max_s  # until the coordinator says (`retry`)
        self._backoff = Backoff()

    def stop(self) -> None:
        self._stopping.set()
        with self._open_lock:
            if self._open is not None:
                self._open.interrupt()

    def run(self) -> None:
        try:
            while not self._stopping.is_set():
                try:
                    pause = self._follow_once()
                except Exception:  # a bug or a strange answer must not end the following
                    log.exception("following the job event stream failed")
                    pause = self._settings.retry_max_s
                self._stopping.wait(pause)
        finally:
            self._save_position()
            self._client.close()

    # ------------------------------------------------------------ one connection

    def _follow_once(self) -> float:
        """Open the stream and read it until it ends; how long to wait before the next."""
        resume = self._position
        headers = {"Accept": "text/event-stream", "Cache-Control": "no-cache"}
        if resume is not None:
            headers["Last-Event-ID"] = resume
        try:
            stream = self._client.open_stream(EVENTS_PATH, headers,
                                              self._settings.event_stream_idle_s)  # fmt: skip
        except CoordinatorAway as away:
            return self._not_open("coordinator_away", f"no coordinator answered: {away}", None)
        with self._open_lock:
            self._open = stream
        try:
            if self._stopping.is_set():
                return 0
            return self._answered(stream, resume)
        finally:
            with self._open_lock:
                self._open = None
            self.up.clear()
            stream.close()
            self._save_position()

    def _answered(self, stream: Stream, resume: str | None) -> float:
        response = stream.response
        content_type = response.getheader("Content-Type") or ""
        if response.status == 200 and content_type.startswith("text/event-stream"):
            self._backoff = Backoff()
            self.up.set()
            kiosk_event("event_stream_opened", url=stream.url, resumed_after=resume)
            ended = self._read(response, reread=resume is None)
            self.up.clear()
            if self._stopping.is_set():
                return 0
            pause = min(self._reconnect_s, self._settings.retry_max_s)
            kiosk_event("event_stream_ended", logging.WARNING, url=stream.url, reason=ended,
                        last_event_id=self._position, reconnect_in_s=pause)  # fmt: skip
            return pause
        body = json_body(response.read(MAX_LINE_BYTES))
        error = body.get("error") if isinstance(body, dict) else None
        code = str(error.get("code")) if isinstance(error, dict) else f"http_{response.status}"
        message = str(error.get("message")) if isinstance(error, dict) else content_type
        if response.status == 410:
            # The id cannot be resumed from (trimmed, or another venue's): start from
            # now, and read the open jobs once the new stream is connected.
            kiosk_event("event_id_gone", logging.WARNING, last_event_id=resume,
                        reason=body.get("reason") if isinstance(body, dict) else None)  # fmt: skip
            self._position = None
            return 0
        if response.status == 404:
            return self._not_open(code, message, NO_STREAM_RETRY_S)
        return self._not_open(code, message, retry_after_s(response))

    def _not_open(self, code: str, message: str, told_wait_s: float | None) -> float:
        # The longer of the back-off and what the coordinator asks: a stream refused
        # for a while (too many streams on one token, say) is asked for again once
        # every retry_max_s once the back-off has grown, while the poller carries on.
        pause = max(self._backoff.fail(self._settings, time.monotonic(), None), told_wait_s or 0)
        if self._backoff.failures == 1:  # once per outage: the poller carries on meanwhile
            kiosk_event("event_stream_unavailable", logging.WARNING, code=code,
                        reason=message, retry_in_s=round(pause, 2))  # fmt: skip
        return pause

    def _read(self, response: http.client.HTTPResponse, *, reread: bool) -> str:
        """Read records until the stream ends; why it ended."""
        parser = EventStreamParser()
        try:
            while not self._stopping.is_set():
                raw = response.readline(MAX_LINE_BYTES + 1)
                if not raw:
                    return "the coordinator ended the stream"
                if len(raw) > MAX_LINE_BYTES:
                    return f"a line over {MAX_LINE_BYTES} bytes"
                dispatch = parser.feed(raw.decode("utf-8", "replace"))
                if parser.retry_ms is not None:
                    self._reconnect_s = parser.retry_ms / 1000
                if dispatch is None:
                    continue
                self._handle(dispatch)
                if reread and self._position is not None:
                    # Connected without an id: from here on every change comes on the
                    # stream; what happened before, one read of each open job tells.
                    reread = False
                    self._reread([r.job_id for r in self._outbox.unfinished_jobs() if r.job_id])
        except TimeoutError:
            return f"nothing came for {self._settings.event_stream_idle_s} s"
        except (OSError, http.client.HTTPException, ValueError) as error:
            return str(error) or type(error).__name__
        return "the kiosk is closing"

    # ------------------------------------------------------------ one record

    def _handle(self, dispatch: Dispatch) -> None:
        position = dispatch.last_event_id or None
        moved = position is not None and position != self._position
        written = False
        if dispatch.data is not None and dispatch.event_type == "job":
            try:
                change = JobChange.from_json(json.loads(dispatch.data))
            except ValueError as error:  # a coordinator's bug: this event is skipped
                kiosk_event("job_event_unreadable", logging.WARNING, error=str(error),
                            last_event_id=position)  # fmt: skip
            else:
                written = self._states.event(change, position if moved else None)
        if not moved:
            return
        self._position = position
        if written:
            self._saved, self._saved_at = position, time.monotonic()
        elif dispatch.data is None or time.monotonic() - self._saved_at >= POSITION_SAVE_S:
            self._save_position()

    def _save_position(self) -> None:
        if self._position == self._saved:
            return
        try:
            self._outbox.set_last_event_id(self._position)
        except OutboxWriteError as error:  # an older id is kept: its events come again
            kiosk_event("outbox_write_failed", logging.ERROR, error=str(error))
            return
        self._saved, self._saved_at = self._position, time.monotonic()
