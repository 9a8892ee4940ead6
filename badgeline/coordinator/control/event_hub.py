"""Fans the venue's job events out to this process's open GET /v1/events streams.

One reader per coordinator process follows the venue's event stream (a blocking
XREAD, store/events.py) and offers each event to every open subscription, which
keeps those its caller may see. A subscription registers before its stream reads
anything older (the catch-up after a Last-Event-ID): events the reader takes from
then on wait in it, and the stream skips those it already sent, so a resume has
neither a gap nor a repeat. A subscriber that falls too far behind (its client
reads slower than events come) is ended: it reconnects with its last id and
catches up from Redis instead of holding an ever longer backlog here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from badgeline.coordinator.store.events import EventRecords, StoredEvent, event_id_key
from badgeline.coordinator.store.records import JobOwner
from badgeline.log import log_event

# Entries one read takes; a blocking read returns at once when events are there,
# and waits well inside a connection's socket timeout (5 s for the embedded server).
READ_BATCH = 500
READ_BLOCK_MS = 1000
# Events waiting in one subscription before it is ended (its client is too slow).
SUBSCRIBER_BACKLOG = 10_000
# How often each replica trims the stream to event_retention_s (an UpkeepLoop, app.py).
EVENT_TRIM_INTERVAL_S = 60.0


@dataclass(frozen=True)
class HubEvent:
    """An event as every stream sends it, encoded once for all of them."""

    id: str
    key: tuple[int, int]
    owner: JobOwner
    frame: bytes  # `id:`, `event: job` and `data:` lines, then the blank line

    @classmethod
    def of(cls, stored: StoredEvent) -> HubEvent:
        frame = f"id: {stored.id}\nevent: job\ndata: {stored.body_json()}\n\n".encode()
        return cls(stored.id, stored.key, stored.owner, frame)


@dataclass(eq=False)  # each one is itself: kept in a set by identity
class Subscription:
    """One open stream's share of the events: those its caller may see, in order."""

    may_see: Callable[[JobOwner], bool]
    start: str  # the newest event when it registered: a stream without a resume id starts here
    events: deque[HubEvent] = field(default_factory=deque)
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    seen: str = ""  # the newest event offered, seen or not: a resume point past hidden ones
    overflowed: bool = False

    def offer(self, event: HubEvent) -> None:
        self.seen = event.id
        if not self.may_see(event.owner) or self.overflowed:
            return
        if len(self.events) >= SUBSCRIBER_BACKLOG:
            self.overflowed = True
            self.events.clear()
        else:
            self.events.append(event)
        self.ready.set()


class EventHub:
    def __init__(self, events: EventRecords) -> None:
        self._events = events
        self._subscriptions: set[Subscription] = set()
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self.position = "0-0"  # the newest event read (or the newest when the reader started)
        self.closing = asyncio.Event()  # set at shutdown: every stream ends

    async def start(self) -> None:
        self.position = await self._events.last_id()
        self._task = asyncio.create_task(self._read_forever(), name="event-hub")

    async def stop(self) -> None:
        # As WakeHub: redis-py may turn a cancellation inside a read into a
        # ConnectionError, so the loop also checks a flag.
        self._stopping = True
        self.end_streams()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(self._task, timeout=5)

    def end_streams(self) -> None:
        """At shutdown: every open stream ends now (its client reconnects elsewhere)."""
        self.closing.set()
        for subscription in self._subscriptions:
            subscription.ready.set()

    @property
    def subscribers(self) -> int:
        return len(self._subscriptions)

    @contextlib.contextmanager
    def subscribe(self, may_see: Callable[[JobOwner], bool]) -> Iterator[Subscription]:
        """Register before reading anything older, so nothing falls between the two."""
        subscription = Subscription(may_see, start=self.position)
        subscription.seen = self.position
        self._subscriptions.add(subscription)
        try:
            yield subscription
        finally:
            self._subscriptions.discard(subscription)

    async def _read_forever(self) -> None:
        backoff, failing = 0.1, False
        while not self._stopping:
            try:
                stored = await self._events.wait_after(self.position, READ_BATCH, READ_BLOCK_MS)
            except asyncio.CancelledError:
                raise
            except Exception as error:  # the reader must outlive Redis restarts
                if self._stopping:
                    return
                if not failing:
                    log_event("event_reader_failing", logging.WARNING, error=repr(error))
                failing = True
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)
                continue
            if failing:
                log_event("event_reader_recovered")
            backoff, failing = 0.1, False
            for entry in stored:
                event = HubEvent.of(entry)
                for subscription in self._subscriptions:
                    subscription.offer(event)
                self.position = entry.id


def newer(event_id: str, than: str) -> bool:
    """Whether one stream id comes after another."""
    return (event_id_key(event_id) or (0, 0)) > (event_id_key(than) or (0, 0))
