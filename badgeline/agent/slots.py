"""The agent's bound on jobs in hand: the lease loop takes, the print loop gives back."""

from __future__ import annotations

import asyncio


class JobSlots:
    """How many jobs the agent holds (leased, not yet finished): the prefetch bound.

    The lease loop takes a slot per leased job; the print loop gives it back
    when the job is finished (printed, failed, dropped or abandoned).
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self.taken = 0
        self._changed = asyncio.Condition()

    @property
    def free(self) -> int:
        return max(0, self.size - self.taken)

    async def wait_free(self) -> int:
        async with self._changed:
            await self._changed.wait_for(lambda: self.free > 0)
            return self.free

    def take(self) -> None:
        self.taken += 1

    async def give_back(self) -> None:
        self.taken -= 1
        async with self._changed:
            self._changed.notify_all()
