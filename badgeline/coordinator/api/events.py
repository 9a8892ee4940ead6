"""GET /v1/events: job state changes as Server-Sent Events (docs/api.md, "Job events").

A kiosk gets the events of the jobs it may read (api/visibility.py: its own and its
group's), an operator every job's. Each event's SSE `id` is its entry in the venue's
event stream (store/events.py), which every replica reads: a client that reconnects,
to this replica or another, with `Last-Event-ID` (or `?last_event_id=` where it cannot
set headers) gets every event after it, once. An id the stream cannot resume from is
410 `event_id_gone`, before anything is streamed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import Iterator

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from badgeline.coordinator.api.auth import Identity
from badgeline.coordinator.api.context import Coordinator, authenticate
from badgeline.coordinator.api.http import CORRELATION_HEADER, correlation_id, query_model
from badgeline.coordinator.api.visibility import may_see
from badgeline.coordinator.control.event_hub import HubEvent, Subscription, newer
from badgeline.coordinator.store import STORE_UNAVAILABLE
from badgeline.coordinator.store.events import Resume
from badgeline.log import log_event
from badgeline.protocol.errors import BadgelineError, ErrorCode

routes = web.RouteTableDef()

# How long a client waits before it reconnects (the SSE `retry` field).
RECONNECT_MS = 2000
CATCH_UP_BATCH = 500
OPEN_STREAMS = web.AppKey("open_event_streams", Counter[str])
STREAM_HEADERS = {
    "Content-Type": "text/event-stream",
    "Cache-Control": "no-store",
    "X-Accel-Buffering": "no",  # a reverse proxy must not hold events back
}
WHAT_TO_DO = (
    "re-read the state of your jobs (GET /v1/jobs/{job_id}, or GET /v1/jobs?attendee_id=) "
    "and reconnect without Last-Event-ID"
)
WHY = {
    Resume.MALFORMED: "is not an event id (<milliseconds>-<sequence>, as the stream's `id:` "
    "lines give it)",
    Resume.UNKNOWN: "names no event of this venue",
    Resume.TRIMMED: "is older than the events the stream keeps (event_retention_s): events "
    "after it are gone",
}


class EventsQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")
    last_event_id: str | None = Field(
        default=None,
        max_length=48,
        description="resume after this event, for clients that cannot send Last-Event-ID",
    )


@routes.get("/v1/events")
async def job_events(request: web.Request) -> web.StreamResponse:
    coordinator, identity = authenticate(request, "kiosk", "operator")
    query = query_model(request, EventsQuery)
    # The header first: a browser's EventSource reconnects to the same URL (with the
    # query's first id) and sends its newer last id in the header.
    resume = request.headers.get("Last-Event-ID") or query.last_event_id or None
    hub = coordinator.event_hub
    with (
        _stream_slot(request, coordinator, identity),
        hub.subscribe(lambda owner: may_see(identity, owner)) as subscription,
    ):
        if resume is not None:
            verdict = await coordinator.store.events.check_resume(resume)
            if verdict is not Resume.OK:
                raise _gone(resume, verdict)
        response = web.StreamResponse(
            headers=STREAM_HEADERS | {CORRELATION_HEADER: correlation_id(request)}
        )
        await response.prepare(request)
        try:
            await _stream(response, coordinator, subscription, resume)
        except ConnectionResetError:
            pass  # the client went away
        except STORE_UNAVAILABLE as error:
            # Mid-stream there is no error body to send: the stream ends, and the
            # client reconnects with its last id (to this replica or another).
            log_event("event_stream_ended", logging.WARNING, error=str(error))
    return response


def _gone(resume: str, verdict: Resume) -> BadgelineError:
    return BadgelineError(
        ErrorCode.EVENT_ID_GONE,
        f"Last-Event-ID {resume[:48]!r} {WHY[verdict]}; {WHAT_TO_DO}",
        extra={"reason": str(verdict)},
    )


@contextlib.contextmanager
def _stream_slot(
    request: web.Request, coordinator: Coordinator, identity: Identity
) -> Iterator[None]:
    """At most event_streams_per_caller open streams per caller on this replica: a
    client reconnecting without hanging up cannot pile up subscriptions."""
    open_streams = request.app[OPEN_STREAMS]
    most = coordinator.settings.event_streams_per_caller
    if open_streams[identity.actor] >= most:
        log_event("event_streams_refused", logging.WARNING, actor=identity.actor, most=most)
        raise BadgelineError(
            ErrorCode.RATE_LIMITED,
            f"this caller already has {most} event streams open (event_streams_per_caller); "
            "close one, or reconnect with Last-Event-ID after closing it",
            extra={"limit": "event_streams"},
            retry_after_s=1,
        )
    open_streams[identity.actor] += 1
    try:
        yield
    finally:
        open_streams[identity.actor] -= 1
        if open_streams[identity.actor] <= 0:
            del open_streams[identity.actor]


async def _stream(
    response: web.StreamResponse, coordinator: Coordinator, subscription: Subscription,
    resume: str | None,
) -> None:  # fmt: skip
    hub = coordinator.event_hub
    await response.write(f"retry: {RECONNECT_MS}\n\n".encode())
    if resume is None:
        # The resume point, before any event: a client that drops before its first
        # event still resumes without a gap (a record with an id and no data sets
        # EventSource's last id and dispatches nothing).
        handled = told = subscription.start
        await response.write(f": connected\nid: {handled}\n\n".encode())
    else:
        handled, told = await _catch_up(response, coordinator, subscription, resume)
    keepalive_s = coordinator.settings.event_keepalive_s
    while not hub.closing.is_set():
        subscription.ready.clear()
        frames = []
        while subscription.events:
            event = subscription.events.popleft()
            if newer(event.id, handled):  # the catch-up sent the older ones
                frames.append(event.frame)
                handled = told = event.id
        if frames:
            await response.write(b"".join(frames))
            continue
        if subscription.overflowed:
            return  # too slow for the live feed: it reconnects and catches up from Redis
        try:
            async with asyncio.timeout(keepalive_s):
                await subscription.ready.wait()
        except TimeoutError:
            # Keeps proxies from dropping an idle stream; with events this caller may
            # not see since its last, it also moves its resume point past them.
            line = b": keep-alive\n"
            position = subscription.seen if newer(subscription.seen, handled) else handled
            if newer(position, told) and not subscription.events:
                line += f"id: {position}\n".encode()
                told = position
            await response.write(line + b"\n")


async def _catch_up(
    response: web.StreamResponse, coordinator: Coordinator, subscription: Subscription,
    resume: str,
) -> tuple[str, str]:  # fmt: skip
    """Send what came after `resume` from the stream itself; returns the last id read
    and the last id sent."""
    handled = told = resume
    while True:
        batch = await coordinator.store.events.after(handled, CATCH_UP_BATCH)
        visible = [e for e in batch if subscription.may_see(e.owner)]
        if visible:
            await response.write(b"".join(HubEvent.of(e).frame for e in visible))
            told = visible[-1].id
        if batch:
            handled = batch[-1].id
        if len(batch) < CATCH_UP_BATCH:
            return handled, told


def install(app: web.Application) -> None:
    app[OPEN_STREAMS] = Counter()
    app.add_routes(routes)
