"""Printers in Redis: heartbeats, the fleet's records, pauses, queue depths and moves."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from badgeline.coordinator.store.records import Records, text
from badgeline.protocol.models import HeartbeatRequest
from badgeline.protocol.states import PrinterLanguage, PrinterState

# Alert events (paper low/out) kept per venue, newest first.
ALERT_EVENTS_KEPT = 500


@dataclass(frozen=True)
class HeartbeatOutcome:
    now_ms: int
    paused: bool
    state: PrinterState
    previous_state: str
    paper: str
    previous_paper: str

    @property
    def changed(self) -> bool:
        return self.previous_state != self.state


@dataclass(frozen=True)
class PrinterRecord:
    """What the coordinator holds about one printer."""

    printer_id: str
    state: str  # a PrinterState, or 'unknown' before its first heartbeat
    health: dict[str, Any] | None  # the last probe report, as the agent sent it
    queue_depth: int
    in_flight: list[str]  # jobs started on it and not yet acked
    paused_until_ms: int
    last_heartbeat_ms: int | None
    agent_id: str | None
    version: str | None
    labels: list[str]
    confirmation: str | None  # how its badges are confirmed, as its agent reported
    paused_reason: str  # what the operator said when pausing it ('' for nothing)
    rejecting: bool  # takes no new jobs (an operator's `reject`); its queue still prints
    rejecting_reason: str
    language: str  # the language it speaks (escpos when its agent does not say)


class PrinterRecords(Records):
    async def heartbeat(
        self, printer_id: str, beat: HeartbeatRequest, verdict: str
    ) -> HeartbeatOutcome:
        """Record a heartbeat; `verdict` is how its probe counts (control/health.py)."""
        k = self.keys
        reply = await self._run(
            "heartbeat",
            [k.printer(printer_id), k.printers, k.paper_level(printer_id), k.alert_events],
            [
                printer_id, beat.agent_id, beat.version, beat.health.model_dump_json(),
                json.dumps(beat.journal), json.dumps(beat.labels), verdict,
                self.settings.fail_threshold, self.settings.recover_after_healthy,
                str(beat.health.paper), ALERT_EVENTS_KEPT, str(beat.confirmation or ""),
                str(beat.language or PrinterLanguage.ESCPOS),
            ],
        )  # fmt: skip
        return HeartbeatOutcome(
            now_ms=int(reply[0]),
            paused=int(reply[1]) > int(reply[0]),
            state=PrinterState(text(reply[2])),
            previous_state=text(reply[3]),
            paper=str(beat.health.paper),
            previous_paper=text(reply[4]),
        )

    async def now_ms(self) -> int:
        """The Redis clock, which heartbeat ages and pauses are measured by."""
        return await self._now_ms()

    async def known(self) -> list[str]:
        """Every printer of the venue that has ever sent a heartbeat, sorted."""
        return sorted(text(p) for p in await self._redis.smembers(self.keys.printers))

    async def record(self, printer_id: str) -> PrinterRecord:
        k = self.keys
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.hgetall(k.printer(printer_id))
            pipe.zcard(k.queue(printer_id))
            pipe.smembers(k.printing(printer_id))
            fields, depth, printing = await pipe.execute()
        raw = {text(key): text(value) for key, value in fields.items()}
        return PrinterRecord(
            printer_id=printer_id,
            state=raw.get("state", "unknown"),
            health=json.loads(raw["health"]) if "health" in raw else None,
            queue_depth=int(depth),
            in_flight=sorted(text(j) for j in printing),
            paused_until_ms=int(raw.get("paused_until_ms") or 0),
            last_heartbeat_ms=int(raw["last_heartbeat_ms"]) if "last_heartbeat_ms" in raw else None,
            agent_id=raw.get("agent_id"),
            version=raw.get("version"),
            labels=json.loads(raw.get("labels") or "[]"),
            confirmation=raw.get("confirmation"),
            paused_reason=raw.get("paused_reason", ""),
            rejecting=raw.get("rejecting") == "1",
            rejecting_reason=raw.get("rejecting_reason", ""),
            language=raw.get("language") or str(PrinterLanguage.ESCPOS),
        )

    async def pause_until(self, printer_id: str, until_ms: int, reason: str = "") -> None:
        """Hold dispatch to the printer until `until_ms` (Redis clock), for `reason`; 0
        resumes it. Wakes its parked long-polls: they wait for the end of the pause
        they last saw."""
        await self._redis.hset(
            self.keys.printer(printer_id),
            mapping={"paused_until_ms": until_ms, "paused_reason": reason},
        )
        await self.wake(printer_id)

    async def set_rejecting(self, printer_id: str, rejecting: bool, reason: str = "") -> None:
        """Refuse (or accept again) new jobs for the printer: submits naming it, routing,
        spills, moves and failovers read the flag in their scripts (includes/common.lua)."""
        await self._redis.hset(
            self.keys.printer(printer_id),
            mapping={"rejecting": "1" if rejecting else "0", "rejecting_reason": reason},
        )

    async def wake(self, printer_id: str) -> None:
        """Wake the long-polls parked on this printer, on every replica."""
        await self._redis.publish(self.keys.wake_channel, printer_id)

    async def queue_depths(self, printer_ids: list[str]) -> dict[str, int]:
        async with self._redis.pipeline(transaction=False) as pipe:
            for printer_id in printer_ids:
                pipe.zcard(self.keys.queue(printer_id))
            depths = await pipe.execute()
        return {p: int(d) for p, d in zip(printer_ids, depths, strict=True)}

    async def healthy(self, printer_ids: list[str]) -> list[str]:
        """Those of these printers whose verdict is healthy, in their order."""
        async with self._redis.pipeline(transaction=False) as pipe:
            for printer_id in printer_ids:
                pipe.hget(self.keys.printer(printer_id), "state")
            states = await pipe.execute()
        healthy = str(PrinterState.HEALTHY)
        return [p for p, s in zip(printer_ids, states, strict=True) if text(s) == healthy]

    async def head_since_ms(self, printer_id: str) -> int | None:
        """When the job at the head of the printer's queue joined it; None when empty."""
        head = await self._redis.zrange(self.keys.queue(printer_id), 0, 0)
        if not head:
            return None
        # updated_ms is the job's last transition: when it joined this queue.
        updated = await self._redis.hget(self.keys.job(text(head[0])), "updated_ms")
        return int(updated) if updated is not None else None

    async def last_queued(self, printer_id: str) -> str | None:
        """The job at the tail of the printer's queue: the one that would wait longest."""
        tail = await self._redis.zrange(self.keys.queue(printer_id), -1, -1)
        return text(tail[0]) if tail else None

    async def move_queued(self, job_id: str, source: str, target: str, actor: str) -> bool:
        """Move a queued job to another printer's queue, keeping its place in print
        order; False when it is no longer queued there or the target is full."""
        k = self.keys
        moved = await self._run(
            "move_queued",
            [k.queue(source), k.queue(target)],
            [k.prefix, job_id, target, self.settings.high_water_mark, actor, k.wake_channel,
             f"rebalanced from {source} to {target}"],
        )  # fmt: skip
        return bool(moved)
