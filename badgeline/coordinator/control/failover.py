"""Health monitoring and failover: the controller that moves a dead printer's
work to healthy printers, each job exactly once.

Every step is one atomic script, and every step is safe when two coordinator
replicas run it at once: a printer's death is an epoch that one script call
claims, a decision id is written once, and due checks are claimed by ZREM.
"""

from __future__ import annotations

import json
import logging
import secrets
from dataclasses import dataclass
from typing import Any

from badgeline.coordinator.config import CoordinatorSettings
from badgeline.coordinator.store.jobs import JobStore
from badgeline.log import log_event

ACTOR = "coordinator:failover"


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _pairs(flat: list[Any]) -> dict[str, str]:
    items = [_text(x) for x in flat]
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


class FailoverController:
    def __init__(self, store: JobStore, settings: CoordinatorSettings) -> None:
        self.store = store
        self.settings = settings
        self.keys = store.keys

    async def candidates(
        self, printer_id: str | None = None, known: list[str] | None = None
    ) -> list[str]:
        """Printers that may take over `printer_id`'s work: its pool peers when
        pools are configured, else every printer of the venue (`known`, when the
        caller has just read them)."""
        for members in self.settings.pools.values():
            if printer_id in members:
                return [p for p in members if p != printer_id]
        if known is None:
            known = [_text(p) for p in await self.store.redis.smembers(self.keys.printers)]
        return sorted(p for p in known if p != printer_id)

    async def candidates_by_printer(self, known: list[str] | None = None) -> str:
        """For the scripts that dispatch jobs of many printers at once (resolve_inflight,
        promote_retries, unpark, redrive): JSON {printer: its pool's printers} for the printers
        of configured pools, '*': every printer. A job follows the same rule as a
        failover's moves: it stays in its printer's pool."""
        if known is None:
            known = [_text(p) for p in await self.store.redis.smembers(self.keys.printers)]
        by_printer: dict[str, list[str]] = {"*": sorted(known)}
        for members in self.settings.pools.values():
            for printer_id in members:
                by_printer.setdefault(printer_id, list(members))
        return json.dumps(by_printer)

    async def check_heartbeats(self) -> FleetCheck:
        k = self.keys
        reply = await self.store.scripts["check_heartbeats"](
            [k.printers, k.inflight_checks, k.retry, k.parked],
            [self.keys.prefix, int(self.settings.heartbeat_interval_s * 1000),
             self.settings.fail_threshold],
        )  # fmt: skip
        changes = [_text(x) for x in reply[0]]
        result = [(changes[i], changes[i + 1], changes[i + 2]) for i in range(0, len(changes), 3)]
        for printer_id, previous, state in result:
            log_event("printer_state_changed", logging.WARNING, printer_id=printer_id,
                      previous=previous, state=state, reason="missed heartbeats")  # fmt: skip
        inflight_due, retries_due, parked = (bool(int(flag)) for flag in reply[3])
        return FleetCheck(
            changes=result,
            awaiting_failover=[_text(p) for p in reply[1]],
            known=sorted(_text(p) for p in reply[2]),
            inflight_due=inflight_due,
            retries_due=retries_due,
            parked=parked,
        )

    async def execute(
        self,
        printer_id: str,
        *,
        mode: str = "auto",
        reason: str = "printer declared dead",
        targets: list[str] | None = None,
        actor: str = ACTOR,
    ) -> dict[str, Any] | None:
        """Run one failover decision; None when it was already executed."""
        candidates = targets if targets is not None else await self.candidates(printer_id)
        decision_id = f"drain-{printer_id}-{secrets.token_hex(4)}" if mode == "drain" else ""
        k = self.keys
        reply = await self.store.scripts["failover"](
            [k.printer(printer_id), k.queue(printer_id), k.leases, k.printing(printer_id),
             k.failovers],
            [k.prefix, printer_id, json.dumps(candidates), self.settings.high_water_mark, actor,
             k.wake_channel, int(self.settings.ack_grace_s * 1000), mode, decision_id, reason],
        )  # fmt: skip
        if int(reply[0]) != 1:
            return None
        decision = normalise_decision(reply[1])
        self._log_decision(decision)
        await self.log_job_events(
            "job_failed_over",
            decision["moved_to"],
            decision_id=decision["decision_id"],
            from_printer=printer_id,
        )
        await self.log_job_events(
            "job_parked",
            dict.fromkeys(decision["parked_job_ids"], "parked"),
            decision_id=decision["decision_id"],
            from_printer=printer_id,
        )
        return decision

    async def log_job_events(self, event: str, placements: dict[str, str], **fields: Any) -> None:
        """One traced line per job moved (invariant 8), with the job's own ids."""
        if not placements:
            return
        async with self.store.redis.pipeline(transaction=False) as pipe:
            for job_id in placements:
                pipe.hmget(self.keys.job(job_id), ["idempotency_key", "correlation_id"])
            traces = await pipe.execute()
        pairs = zip(placements.items(), traces, strict=True)
        for (job_id, printer_id), (key, correlation) in pairs:
            log_event(event, logging.WARNING, job_id=job_id, printer_id=printer_id,
                      idempotency_key=_text(key or b""), correlation_id=_text(correlation or b""),
                      **fields)  # fmt: skip

    def _log_decision(self, decision: dict[str, Any]) -> None:
        log_event(
            "printer_failover_executed", logging.WARNING,
            decision_id=decision["decision_id"], dead_printer_id=decision["dead_printer_id"],
            target_printer_ids=sorted(decision["targets"]),
            drained_count=len(decision["drained_job_ids"]),
            parked_count=len(decision["parked_job_ids"]),
            inflight_job_ids=decision["inflight_job_ids"], reason=decision["reason"],
        )  # fmt: skip
        if decision["parked_job_ids"]:
            log_event("no_healthy_target", logging.ERROR, printer_id=decision["dead_printer_id"],
                      parked=len(decision["parked_job_ids"]))  # fmt: skip

    async def resolve_inflight(self, known: list[str] | None = None) -> None:
        reply = await self.store.scripts["resolve_inflight"](
            [self.keys.inflight_checks],
            [self.keys.prefix, await self.candidates_by_printer(known),
             self.settings.high_water_mark,
             self.settings.failover_policy, ACTOR, self.keys.wake_channel],
        )  # fmt: skip
        items = [_text(x) for x in reply]
        for i in range(0, len(items), 4):
            job_id, decision_id, outcome, printer_id = items[i : i + 4]
            await self.log_job_events("inflight_resolved", {job_id: printer_id},
                                      decision_id=decision_id, outcome=outcome,
                                      inflight_acked=outcome == "acked",
                                      reprinted_inflight=outcome == "reprinted")  # fmt: skip

    async def promote_retries_and_unpark(self, known: list[str] | None = None) -> None:
        k = self.keys
        everyone = await self.candidates_by_printer(known)
        promoted = await self.store.scripts["promote_retries"](
            [k.retry], [k.prefix, everyone, self.settings.high_water_mark, ACTOR, k.wake_channel]
        )
        unparked = await self.store.scripts["unpark"](
            [k.parked],
            [k.prefix, everyone, self.settings.high_water_mark, ACTOR, k.wake_channel, 200],
        )
        await self.log_job_events("job_retry_due", _pairs(promoted))
        await self.log_job_events("job_unparked", _pairs(unparked))

    async def tick(self) -> None:
        # One read of the fleet per tick, shared by every step: a tick costs one
        # round trip whatever the number of printers, plus one per step that the
        # read found work for. The monitor ticks 10 times a second on every replica;
        # running the three timer scripts every time was 3 of its 4 round trips.
        fleet = await self.check_heartbeats()
        for printer_id in fleet.awaiting_failover:
            await self.execute(printer_id, targets=await self.candidates(printer_id, fleet.known))
        # A failover this tick may have parked jobs or set inflight checks (due at
        # once with ack_grace_s = 0) that the read above could not see.
        failed_over = bool(fleet.awaiting_failover)
        if fleet.inflight_due or failed_over:
            await self.resolve_inflight(fleet.known)
        if fleet.retries_due or fleet.parked or failed_over:
            await self.promote_retries_and_unpark(fleet.known)

    async def decisions(self, limit: int = 100) -> list[dict[str, Any]]:
        ids = await self.store.redis.lrange(self.keys.failovers, 0, limit - 1)
        raws = [await self.store.redis.get(self.keys.failover(_text(i))) for i in ids]
        return [normalise_decision(raw) for raw in raws if raw]
