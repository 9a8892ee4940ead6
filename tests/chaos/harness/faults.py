"""Carry out a fault schedule on a venue, and log when each fault really struck and cleared.

Times in the log are `time.time()` on this host, the same clock Redis `TIME`
reads, so the checker can lay them beside a job's history.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any

from tests.chaos.harness.schedule import PRINTER_FAULTS, FaultEvent
from tests.chaos.harness.venue import ChaosVenue

log = logging.getLogger("badgeline.chaos")


@dataclass
class FaultRecord:
    event: FaultEvent
    struck_at: float | None = None
    cleared_at: float | None = None
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {**self.event.as_dict(), "struck_at": self.struck_at,
                "cleared_at": self.cleared_at, "error": self.error}  # fmt: skip


async def strike(venue: ChaosVenue, event: FaultEvent) -> None:
    kind, target = event.kind, event.target
    if kind == "agent_kill":
        venue.kill_agent(target)
    elif kind == "coordinator_kill":
        venue.kill_coordinator(target)
    elif kind == "redis_kill":
        await venue.kill_redis()
    elif kind == "link_cut":
        venue.proxies[target].cut()
    elif kind in PRINTER_FAULTS:
        await venue.set_fault(target, kind)
    elif kind == "slow":
        await venue.set_speed(target, event.ms_per_badge)
    else:
        raise ValueError(f"unknown fault kind {kind}")


async def clear(venue: ChaosVenue, event: FaultEvent) -> None:
    kind, target = event.kind, event.target
    if kind == "agent_kill":
        venue.start_agent(target)
    elif kind == "coordinator_kill":
        venue.start_coordinator(target)
    elif kind == "redis_kill":
        await venue.start_redis()
    elif kind == "link_cut":
        venue.proxies[target].heal()
    elif kind in PRINTER_FAULTS:
        await venue.set_fault(target, "none")
    elif kind == "slow":
        await venue.set_speed(target, 0)


class FaultRunner:
    def __init__(self, venue: ChaosVenue, schedule: list[FaultEvent]) -> None:
        self.venue = venue
        self.records = [FaultRecord(event) for event in schedule]

    async def run(self, started: float) -> None:
        """Play the schedule; `started` is the loop time its offsets count from."""
        await asyncio.gather(*(self._play(record, started) for record in self.records))

    async def _play(self, record: FaultRecord, started: float) -> None:
        loop = asyncio.get_running_loop()
        event = record.event
        await asyncio.sleep(max(0.0, started + event.at_s - loop.time()))
        record.struck_at = time.time()  # from the moment the strike begins
        try:
            await strike(self.venue, event)
            log.info("fault %d %s %s struck", event.number, event.kind, event.target)
            await asyncio.sleep(event.duration_s)
        except Exception as error:  # a fault that could not be struck is reported, not fatal
            record.error = f"strike: {error!r}"
        await self._clear(record)

    async def _clear(self, record: FaultRecord) -> None:
        for attempt in range(5):
            try:
                await clear(self.venue, record.event)
            except Exception as error:
                record.error = f"clear attempt {attempt + 1}: {error!r}"
                await asyncio.sleep(1.0)
                continue
            record.cleared_at = time.time()
            log.info("fault %d cleared", record.event.number)
            return
