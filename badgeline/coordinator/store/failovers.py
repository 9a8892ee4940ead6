"""Failover in Redis: the fleet's heartbeat check, failover decisions, and the
timers that resolve in-flight jobs, promote retries and unpark jobs.

Every step is one atomic script, safe when two coordinator replicas run it at
once: a printer's death is an epoch that one script call claims, a decision id
is written once, and due checks are claimed by ZREM.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from badgeline.coordinator.store.records import Records, text

# Most parked jobs one unpark pass dispatches: a venue-wide outage can park
# thousands, and one script must not hold Redis for all of them.
UNPARK_BATCH = 200


def _pairs(flat: list[Any]) -> dict[str, str]:
    items = [text(x) for x in flat]
    return dict(zip(items[0::2], items[1::2], strict=True))


def normalise_decision(raw: str | bytes) -> dict[str, Any]:
    """Lua's cjson writes an empty list as {}: give readers real lists."""
    decision: dict[str, Any] = json.loads(raw)
    for field in ("drained_job_ids", "parked_job_ids", "inflight_job_ids"):
        if decision.get(field) == {}:
            decision[field] = []
    decision.setdefault("inflight_resolution", {})
    decision.setdefault("moved_to", {})
    return decision


@dataclass(frozen=True)
class FleetCheck:
    changes: list[tuple[str, str, str]]  # (printer_id, old state, new state)
    awaiting_failover: list[str]
    known: list[str]
    # Whether resolve_inflight / promote_retries / unpark have anything to do.
    inflight_due: bool = True
    retries_due: bool = True
    parked: bool = True


@dataclass(frozen=True)
class InflightResolution:
    """What became of a job that was printing on a printer that failed over."""

    job_id: str
    decision_id: str
    outcome: str  # acked, reprinted, held, …: see resolve_inflight-1.lua
    printer_id: str


class FailoverRecords(Records):
    async def check_heartbeats(self) -> FleetCheck:
        """One read of the fleet: state changes from missed heartbeats, printers
        awaiting failover, and whether any timer has work."""
        k = self.keys
        reply = await self._run(
            "check_heartbeats",
            [k.printers, k.inflight_checks, k.retry, k.parked],
            [k.prefix, int(self.settings.heartbeat_interval_s * 1000),
             self.settings.fail_threshold],
        )  # fmt: skip
        changes = [text(x) for x in reply[0]]
        inflight_due, retries_due, parked = (bool(int(flag)) for flag in reply[3])
        return FleetCheck(
            changes=[
                (changes[i], changes[i + 1], changes[i + 2]) for i in range(0, len(changes), 3)
            ],
            awaiting_failover=[text(p) for p in reply[1]],
            known=sorted(text(p) for p in reply[2]),
            inflight_due=inflight_due,
            retries_due=retries_due,
            parked=parked,
        )

    async def fail_over(
        self,
        printer_id: str,
        candidates: list[str],
        *,
        mode: str,
        decision_id: str,
        reason: str,
        actor: str,
    ) -> dict[str, Any] | None:
        """Move the printer's work to `candidates`; the decision, or None when this
        death was already failed over (by this replica or another)."""
        k = self.keys
        reply = await self._run(
            "failover",
            [k.printer(printer_id), k.queue(printer_id), k.leases, k.printing(printer_id),
             k.failovers],
            [k.prefix, printer_id, json.dumps(candidates), self.settings.high_water_mark, actor,
             k.wake_channel, int(self.settings.ack_grace_s * 1000), mode, decision_id, reason],
        )  # fmt: skip
        return normalise_decision(reply[1]) if int(reply[0]) == 1 else None

    async def resolve_inflight(
        self, candidates_by_printer: str, actor: str
    ) -> list[InflightResolution]:
        k = self.keys
        reply = await self._run(
            "resolve_inflight",
            [k.inflight_checks],
            [k.prefix, candidates_by_printer, self.settings.high_water_mark,
             self.settings.failover_policy, actor, k.wake_channel],
        )  # fmt: skip
        items = [text(x) for x in reply]
        return [InflightResolution(*items[i : i + 4]) for i in range(0, len(items), 4)]

    async def promote_retries(self, candidates_by_printer: str, actor: str) -> dict[str, str]:
        """Queue the retries that are due; {job_id: printer_id} of each."""
        k = self.keys
        promoted = await self._run(
            "promote_retries",
            [k.retry],
            [k.prefix, candidates_by_printer, self.settings.high_water_mark, actor, k.wake_channel],
        )
        return _pairs(promoted)

    async def unpark(self, candidates_by_printer: str, actor: str) -> dict[str, str]:
        """Queue parked jobs that now have a healthy printer; {job_id: printer_id}."""
        k = self.keys
        unparked = await self._run(
            "unpark",
            [k.parked],
            [k.prefix, candidates_by_printer, self.settings.high_water_mark, actor,
             k.wake_channel, UNPARK_BATCH],
        )  # fmt: skip
        return _pairs(unparked)

    async def decisions(self, limit: int = 100) -> list[dict[str, Any]]:
        """The failover decisions, newest first."""
        ids = await self._redis.lrange(self.keys.failovers, 0, limit - 1)
        raws = [await self._redis.get(self.keys.failover(text(i))) for i in ids]
        return [normalise_decision(raw) for raw in raws if raw]

    async def decision_page(
        self, after: str | None, count: int
    ) -> list[tuple[str, dict[str, Any] | None]]:
        """Up to `count` (decision id, decision), newest first, after the decision
        `after` (None: from the newest); a record gone missing reads None."""
        ids = [text(i) for i in await self._run(
            "list_after", [self.keys.failovers], ["member", after or "", count])]  # fmt: skip
        raws = [await self._redis.get(self.keys.failover(i)) for i in ids]
        return [
            (i, normalise_decision(raw) if raw else None) for i, raw in zip(ids, raws, strict=True)
        ]

    async def decision_count(self) -> int:
        return int(await self._redis.llen(self.keys.failovers))
