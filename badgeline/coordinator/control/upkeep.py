"""Background upkeep loops (lease scanner, failover monitor) with a clean stop.

A loop logs a failure once, carries on, and logs its recovery. Stopping sets a
flag as well as cancelling: redis-py can turn a cancellation that lands inside
a socket read into a ConnectionError, which a plain `except Exception` would
swallow, leaving a loop that never ends and an app that never shuts down.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from badgeline.log import log_event


class UpkeepLoop:
    def __init__(
        self,
        name: str,
        step: Callable[[], Awaitable[object]],
        interval_s: float,
        wakeup: asyncio.Event | None = None,
    ) -> None:
        self.name = name
        self.step = step
        self.interval_s = interval_s
        self.wakeup = wakeup or asyncio.Event()
        self._stopping = False
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=self.name)

    async def stop(self, grace_s: float = 5.0) -> None:
        self._stopping = True
        self.wakeup.set()
        if self._task is None:
            return
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError, TimeoutError):
            await asyncio.wait_for(self._task, grace_s)

    async def _run(self) -> None:
        failing = False
        this_task = asyncio.current_task()
        # A swallowed cancellation still shows as `cancelling()` on the task.
        while not self._stopping and not (this_task and this_task.cancelling()):
            try:
                await self.step()
                if failing:
                    log_event(f"{self.name}_recovered")
                failing = False
            except asyncio.CancelledError:
                raise
            except Exception as error:
                if self._stopping:
                    return
                if not failing:  # once per state change, not once per attempt
                    log_event(f"{self.name}_failing", logging.ERROR, error=repr(error))
                failing = True
            self.wakeup.clear()
            with contextlib.suppress(TimeoutError):  # no task per wait, unlike wait_for
                async with asyncio.timeout(self.interval_s):
                    await self.wakeup.wait()
