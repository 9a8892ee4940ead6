"""The venue's wake channel: scripts that enqueue PUBLISH the printer id on it
when its queue goes from empty to one job (scripts/includes/common.lua), and
pause and resume publish for the printer they change.

One subscription per coordinator process listens (control/wakeups.py fans it
out to the parked long-polls). On a cluster a PUBLISH reaches every node over
the bus, so the subscription may sit on any node.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from redis.asyncio.client import PubSub

from badgeline.coordinator.store.connection import RedisClient
from badgeline.coordinator.store.records import text

# Ping an idle subscription now and then so a dead connection is noticed.
KEEPALIVE_EVERY_IDLE_POLLS = 15
SUBSCRIBE_CONFIRM_S = 10.0


class WakeChannel:
    def __init__(self, redis: RedisClient, channel: str) -> None:
        self._redis = redis
        self.channel = channel

    async def listen(
        self,
        on_ready: Callable[[], None],
        on_wake: Callable[[str], None],
        running: Callable[[], bool],
    ) -> None:
        """Subscribe, call `on_ready` once the server runs the subscription, then
        `on_wake(printer_id)` for each message while `running()`. Raises when the
        connection is lost (the caller resubscribes)."""
        pubsub = self._redis.pubsub()
        try:
            await pubsub.subscribe(self.channel)
            await self._confirmed(pubsub)
            on_ready()
            idle_polls = 0
            while running():
                message = await pubsub.get_message(timeout=1.0)
                if message is None:
                    idle_polls += 1
                    if idle_polls % KEEPALIVE_EVERY_IDLE_POLLS == 0:
                        await pubsub.ping()
                    continue
                if message.get("type") == "message":
                    on_wake(text(message["data"]))
        finally:
            await pubsub.aclose()

    async def _confirmed(self, pubsub: PubSub) -> None:
        """SUBSCRIBE returns once sent, not once run: a publish before the server ran
        it is not heard. On a cluster the publish may also come from another node."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + SUBSCRIBE_CONFIRM_S
        while loop.time() < deadline:
            message = await pubsub.get_message(timeout=1.0)
            if message is not None and message.get("type") == "subscribe":
                return
        raise TimeoutError(f"no confirmation of SUBSCRIBE {self.channel}")
