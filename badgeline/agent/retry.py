"""Back-off and outage reporting shared by the agent's retry loops.

Backoff, never a storm: a venue's agents all lose the coordinator at the same
moment (a switch reboots), so every loop waits exponentially longer, with
jitter so they do not come back in lock-step, up to a cap. And a loop logs
when its link goes down and when it comes back, never once per attempt: an
outage of ten minutes is two log lines, not six hundred.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from badgeline.log import log_event

T = TypeVar("T")


class Backoff:
    """Exponential delays with jitter and a cap: initial, 2x, 4x … max, each scaled by 0.5-1."""

    def __init__(self, initial_s: float, max_s: float, *, rng: random.Random | None = None):
        self.initial_s = initial_s
        self.max_s = max_s
        self.failures = 0
        self._rng = rng or random.Random()

    def next_delay(self) -> float:
        """Count one failure and return how long to wait before the next attempt."""
        ceiling = min(self.max_s, self.initial_s * 2 ** min(self.failures, 30))
        self.failures += 1
        return ceiling * self._rng.uniform(0.5, 1.0)

    def reset(self) -> None:
        self.failures = 0


class OutageLog:
    """Logs a link's state changes (up -> down -> up), not every failed attempt."""

    def __init__(self, link: str, **fields: Any) -> None:
        self.link = link
        self.fields = fields
        self.down_since_attempts = 0
        self._last_problem: str | None = None

    @property
    def is_down(self) -> bool:
        return self._last_problem is not None

    def failed(self, problem: str) -> None:
        self.down_since_attempts += 1
        if self._last_problem is None:
            log_event("link_down", logging.WARNING, link=self.link, problem=problem, **self.fields)
        elif _kind(problem) != _kind(self._last_problem):
            # A different failure is a state change worth a line (e.g. refused -> 401).
            log_event(
                "link_still_down", logging.WARNING, link=self.link, problem=problem, **self.fields
            )
        self._last_problem = problem

    def succeeded(self) -> None:
        if self._last_problem is not None:
            log_event(
                "link_up",
                link=self.link,
                failed_attempts=self.down_since_attempts,
                last_problem=self._last_problem,
                **self.fields,
            )
        self._last_problem = None
        self.down_since_attempts = 0


def _kind(problem: str) -> str:
    return problem.split(":", 1)[0]


async def unless_stopped(awaitable: Awaitable[T], stopping: asyncio.Event) -> T | None:
    """Await `awaitable`, or give up (cancelling it) as soon as `stopping` is set: None then."""
    if stopping.is_set():
        if asyncio.iscoroutine(awaitable):
            awaitable.close()  # never started: nothing to cancel, only to discard
        else:
            asyncio.ensure_future(awaitable).cancel()
        return None
    work = asyncio.ensure_future(awaitable)
    stop_wait = asyncio.ensure_future(stopping.wait())
    try:
        await asyncio.wait({work, stop_wait}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stop_wait.cancel()
        if not work.done():
            work.cancel()
            await asyncio.gather(work, return_exceptions=True)
    if work.cancelled():
        return None
    return work.result()


class ComebackSignal:
    """Ends a loop's back-off when the coordinator answers any call again.

    A loop that found the coordinator away backs off (up to retry_max_s, 15 s in
    the field); once heartbeats or leases get through again it should retry at
    once, not sleep the rest out. `register` is the client's `on_success`.
    """

    def __init__(self, register: Callable[[Callable[[], None]], None]) -> None:
        self._back = asyncio.Event()
        self._away = False
        register(self._answered)

    def coordinator_away(self, away: bool = True) -> None:
        """A call just failed (`away`: for want of an answer): only later answers count."""
        self._back.clear()
        self._away = away

    def coordinator_answered(self) -> None:
        self._away = False

    def _answered(self) -> None:
        if self._away:
            self._back.set()

    async def back_off(self, delay_s: float, stopping: asyncio.Event) -> bool:
        """Wait `delay_s`, or less if the coordinator is back; False if stopping."""
        waits = [asyncio.ensure_future(self._back.wait()),
                 asyncio.ensure_future(stopping.wait())]  # fmt: skip
        try:
            await asyncio.wait(waits, timeout=delay_s, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()
        return not stopping.is_set()


async def sleep_unless_stopped(delay_s: float, stopping: asyncio.Event) -> bool:
    """Sleep `delay_s`; return False at once if `stopping` is set meanwhile."""
    try:
        async with asyncio.timeout(delay_s):
            await stopping.wait()
    except TimeoutError:
        return True
    return False
