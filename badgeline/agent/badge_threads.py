"""Blocking calls made on a badge's behalf, watched past the badge's budget.

A badge's preparation ends at its budget whatever happens: the timeout cancels
the coroutine. The thread a blocking call runs in cannot be cancelled, though:
a file read that never returns (a hung SD card or network mount) keeps its
thread for ever, and once the default executor's few threads are all held so,
every later badge times out. So the threads themselves are watched: each call
records the deadline of the badge it works for while, and only while, it runs,
and `overdue_s` says how far the oldest is past its deadline. The agent's
/healthz calls the lease loop stuck on it (liveness.py), and systemd restarts
the agent.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

T = TypeVar("T")


class ThreadWatch:
    """The deadlines of the blocking calls running in threads for badges."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: dict[object, float] = {}

    def overdue_s(self) -> float:
        """How far the oldest running call is past its badge's deadline (0: none is)."""
        now = time.monotonic()
        with self._lock:
            deadlines = list(self._running.values())
        return max((now - deadline for deadline in deadlines), default=0.0)

    def call(self, deadline: float, function: Callable[..., T], *args: object) -> T:
        """Run `function` here (in a worker thread), on record while it runs.

        Recorded from inside the thread: a call cancelled before a thread took
        it never ran, and must not be reported as stuck.
        """
        key = object()
        with self._lock:
            self._running[key] = deadline
        try:
            return function(*args)
        finally:
            with self._lock:
                del self._running[key]


# The watch and deadline of the badge being prepared in this task (prepare.py sets it).
_current: ContextVar[tuple[ThreadWatch, float] | None] = ContextVar("badge_thread", default=None)


@contextmanager
def preparing_until(watch: ThreadWatch, deadline: float) -> Iterator[None]:
    """Inside this block, this task's blocking calls work for a badge due by `deadline`."""
    token = _current.set((watch, deadline))
    try:
        yield
    finally:
        _current.reset(token)


async def badge_thread(function: Callable[..., T], *args: object) -> T:
    """`asyncio.to_thread`, watched against the current badge's deadline if there is one."""
    current = _current.get()
    if current is None:
        return await asyncio.to_thread(function, *args)
    watch, deadline = current
    return await asyncio.to_thread(watch.call, deadline, function, *args)
