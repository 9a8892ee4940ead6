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
from typing import Any

from badgeline.coordinator.config import CoordinatorSettings
from badgeline.coordinator.store import Store
from badgeline.coordinator.store.failovers import FleetCheck
from badgeline.log import log_event

ACTOR = "coordinator:failover"


class FailoverController:
    def __init__(self, store: Store, settings: CoordinatorSettings) -> None:
        self.store = store
        self.settings = settings

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
            known = await self.store.printers.known()
        return sorted(p for p in known if p != printer_id)

    async def candidates_by_printer(self, known: list[str] | None = None) -> str:
        """For the scripts that dispatch jobs of many printers at once (resolve_inflight,
        promote_retries, unpark, redrive): JSON {printer: its pool's printers} for the printers
        of configured pools, '*': every printer. A job follows the same rule as a
        failover's moves: it stays in its printer's pool."""
        if known is None:
            known = await self.store.printers.known()
        by_printer: dict[str, list[str]] = {"*": sorted(known)}
        for members in self.settings.pools.values():
            for printer_id in members:
                by_printer.setdefault(printer_id, list(members))
        return json.dumps(by_printer)

    async def check_heartbeats(self) -> FleetCheck:
        fleet = await self.store.failovers.check_heartbeats()
        for printer_id, previous, state in fleet.changes:
            log_event("printer_state_changed", logging.WARNING, printer_id=printer_id,
                      previous=previous, state=state, reason="missed heartbeats")  # fmt: skip
        return fleet

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
        decision = await self.store.failovers.fail_over(
            printer_id, candidates, mode=mode, decision_id=decision_id, reason=reason, actor=actor
        )
        if decision is None:
            return None
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
        traces = await self.store.jobs.traces_of(list(placements))
        for (job_id, printer_id), trace in zip(placements.items(), traces, strict=True):
            log_event(event, logging.WARNING, job_id=job_id, printer_id=printer_id,
                      idempotency_key=trace.idempotency_key, correlation_id=trace.correlation_id,
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
        resolutions = await self.store.failovers.resolve_inflight(
            await self.candidates_by_printer(known), ACTOR
        )
        for r in resolutions:
            await self.log_job_events("inflight_resolved", {r.job_id: r.printer_id},
                                      decision_id=r.decision_id, outcome=r.outcome,
                                      inflight_acked=r.outcome == "acked",
                                      reprinted_inflight=r.outcome == "reprinted")  # fmt: skip

    async def promote_retries_and_unpark(self, known: list[str] | None = None) -> None:
        everyone = await self.candidates_by_printer(known)
        promoted = await self.store.failovers.promote_retries(everyone, ACTOR)
        unparked = await self.store.failovers.unpark(everyone, ACTOR)
        await self.log_job_events("job_retry_due", promoted)
        await self.log_job_events("job_unparked", unparked)

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
        return await self.store.failovers.decisions(limit)
