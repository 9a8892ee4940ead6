"""Wakes long-polling agents the moment their printer's queue gains work.

Scripts that enqueue PUBLISH the printer id on the venue's wake channel when
its queue goes from empty to one job (only then can a long-poll be parked on
it: scripts/includes/common.lua), and `pause` and `resume` publish for the printer
they change; one pub/sub connection per coordinator process fans that out to
local waiters. Nothing publishes when a timed pause runs out: a long-poll parked
on a paused printer caps its wait at the pause's end instead (api/agent.py, lease).
A wake-up is only a hint: the woken handler runs the atomic lease script, which
may find nothing because another replica won. If the subscription drops, every
waiter is woken so that nobody sleeps through work while it reconnects.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import defaultdict
from collections.abc import Iterator

from badgeline.coordinator.store.wake_channel import WakeChannel
from badgeline.log import log_event


class WakeHub:
    def __init__(self, channel: WakeChannel) -> None:
        self._channel = channel
        self._waiters: dict[str, set[asyncio.Event]] = defaultdict(set)
        self._task: asyncio.Task[None] | None = None
        self._subscribed = asyncio.Event()
        self._stopping = False
        self.closing = False  # set at shutdown: long-polls stop waiting

    async def start(self) -> None:
        self._task = asyncio.create_task(self._listen_forever(), name="wake-hub")
        # Waiting here means a lease long-poll started right after start-up
        # cannot miss a wake-up that arrives before the subscription is live.
        await asyncio.wait_for(self._subscribed.wait(), timeout=10)

    async def stop(self) -> None:
        # redis-py can turn a cancellation inside a read into a ConnectionError,
        # so the loop also checks a flag and never blocks for long.
        self._stopping = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(self._task, timeout=5)

    @contextlib.contextmanager
    def waiter(self, printer_id: str) -> Iterator[asyncio.Event]:
        """Register before checking for work, so a wake between the check and the wait counts."""
        event = asyncio.Event()
        self._waiters[printer_id].add(event)
        try:
            yield event
        finally:
            self._waiters[printer_id].discard(event)
            if not self._waiters[printer_id]:
                del self._waiters[printer_id]

    def waiting(self, printer_id: str) -> int:
        """How many long-polls are parked on this printer right now (tests, metrics)."""
        return len(self._waiters.get(printer_id, ()))

    def wake(self, printer_id: str) -> None:
        for event in self._waiters.get(printer_id, ()):
            event.set()

    def end_waits(self) -> None:
        """At shutdown: answer every parked long-poll now (with no jobs) instead of
        letting the server wait out their `wait` before it can stop."""
        self.closing = True
        self.wake_everyone()

    def wake_everyone(self) -> None:
        for events in self._waiters.values():
            for event in events:
                event.set()

    async def _listen_forever(self) -> None:
        backoff = 0.1
        while not self._stopping:
            try:
                await self._listen_once()
            except asyncio.CancelledError:
                raise
            except Exception as error:  # the listener must outlive Redis restarts
                if self._stopping:
                    return
                self._subscribed.clear()
                self.wake_everyone()
                log_event("wake_channel_lost", logging.WARNING, error=str(error))
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)

    async def _listen_once(self) -> None:
        def ready() -> None:
            self._subscribed.set()
            self.wake_everyone()

        await self._channel.listen(ready, self.wake, lambda: not self._stopping)
