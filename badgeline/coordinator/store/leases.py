"""Leases in Redis: what an agent is handed, its start grant, renewal, its ack,
and the scanner's return of leases that were never started.

The exactly-once rules live in the scripts (lease-3, start-2, renew-2, ack-5,
expire_leases-1): a start is granted once per lease and fenced, an ack is
recorded once, a lease past its time goes back to its queue unless started.
"""

from __future__ import annotations

import json
import random
import secrets
from dataclasses import dataclass
from typing import Any

from badgeline.coordinator.store.records import JobTrace, Records, text
from badgeline.protocol.agent_models import AckRequest, LeasedJob, LeasedPrintJob
from badgeline.protocol.errors import BadgelineError, ErrorCode
from badgeline.protocol.failures import is_permanent
from badgeline.protocol.states import JobState


@dataclass(frozen=True)
class LeaseOutcome:
    jobs: list[LeasedJob]
    # How long the printer stays paused (0 when it is not): nothing is published when
    # a timed pause runs out, so a parked long-poll must not sleep past its end.
    pause_left_s: float = 0.0


@dataclass(frozen=True)
class StartOutcome:
    granted: bool
    trace: JobTrace
    fence: int | None = None
    reason: str | None = None
    repeated: bool = False


@dataclass(frozen=True)
class AckOutcome:
    state: JobState
    recorded: bool
    trace: JobTrace
    stray: bool = False
    # Acceptance to print, when this ack is the job's first printed report.
    scan_to_print_s: float | None = None


@dataclass(frozen=True)
class ExpiredLease:
    """A job the lease scanner returned to its queue."""

    job_id: str
    printer_id: str
    lease_id: str
    trace: JobTrace


class LeaseRecords(Records):
    async def lease(self, printer_id: str, max_jobs: int, actor: str) -> LeaseOutcome:
        k = self.keys
        lease_prefix = "lease_" + secrets.token_hex(6)
        ttl_ms = int(self.settings.lease_ttl_s * 1000)
        reply = await self._run(
            "lease",
            [k.queue(printer_id), k.leases, k.printer(printer_id)],
            [k.prefix, printer_id, max_jobs, ttl_ms, lease_prefix, actor],
        )
        return LeaseOutcome(
            jobs=[self._leased(json.loads(text(item))) for item in reply[1]],
            pause_left_s=int(reply[0]) / 1000,
        )

    def _leased(self, doc: dict[str, Any]) -> LeasedJob:
        # Built without validating again: the payload was checked when it was accepted,
        # and a job the current rules would refuse must still reach its agent, which
        # fails it as that job's problem; refusing it here would hold its queue.
        job = LeasedPrintJob.model_construct(
            **doc["payload"], attempts=int(doc["attempts"] or 0),
            possible_duplicate=bool(doc["possible_duplicate"]),
            correlation_id=doc["correlation_id"] or "",
        )  # fmt: skip
        return LeasedJob(
            job_id=doc["job_id"], lease_id=doc["lease_id"], lease_ttl_s=self.settings.lease_ttl_s,
            job=job,
        )  # fmt: skip

    async def grant_start(
        self, printer_id: str, job_id: str, lease_id: str, actor: str
    ) -> StartOutcome:
        reply = await self._run(
            "start", [self.keys.job(job_id), self.keys.leases],
            [self.keys.prefix, printer_id, lease_id, actor],
        )  # fmt: skip
        code = int(reply[0])
        if code == -2:
            raise BadgelineError(ErrorCode.NOT_FOUND, f"no job {job_id}")
        trace = JobTrace(text(reply[2]), text(reply[3]))
        if code == 0:
            return StartOutcome(granted=False, trace=trace, reason=text(reply[1]))
        return StartOutcome(granted=True, trace=trace, fence=int(reply[1]), repeated=code == 2)

    async def renew(self, printer_id: str, job_id: str, lease_id: str) -> JobState | None:
        """Extend a lease its agent still holds by the lease time; None when renewed, else
        the job's state (the lease is gone: the agent must not start it)."""
        ttl_ms = int(self.settings.lease_ttl_s * 1000)
        reply = await self._run(
            "renew", [self.keys.job(job_id), self.keys.leases], [printer_id, lease_id, ttl_ms]
        )
        if int(reply[0]) == -2:
            raise BadgelineError(ErrorCode.NOT_FOUND, f"no job {job_id}")
        return None if int(reply[0]) == 1 else JobState(text(reply[1]))

    async def ack(self, printer_id: str, job_id: str, ack: AckRequest, actor: str) -> AckOutcome:
        k = self.keys
        reply = await self._run(
            "ack",
            [k.job(job_id), k.prints(job_id), k.leases, k.printed_twice, k.dead_letters],
            [
                k.prefix, printer_id, ack.lease_id, str(ack.result), ack.error or "",
                self.settings.max_attempts, actor, k.wake_channel, self.settings.uncertain_policy,
                int(self.settings.retry_backoff_unit_s * 1000),
                int(self.settings.retry_backoff_cap_s * 1000), random.uniform(0.8, 1.2),
                str(ack.reason or ""), "1" if is_permanent(ack.reason) else "0",
            ],
        )  # fmt: skip
        if int(reply[0]) == -2:
            raise BadgelineError(ErrorCode.NOT_FOUND, f"no job {job_id}")
        scan_to_print_s = None
        if len(reply) > 4 and int(reply[4]) == 1:  # newly printed, counted by the script's tally
            scan_to_print_s = max(0, int(reply[6]) - int(reply[5])) / 1000
        return AckOutcome(
            state=JobState(text(reply[1])),
            recorded=int(reply[0]) == 1,
            trace=JobTrace(text(reply[2]), text(reply[3])),
            stray=int(reply[0]) == 3,
            scan_to_print_s=scan_to_print_s,
        )

    async def expire(self, actor: str, limit: int = 500) -> list[ExpiredLease]:
        k = self.keys
        reply = await self._run(
            "expire_leases", [k.leases], [k.prefix, limit, k.wake_channel, actor]
        )
        return [
            ExpiredLease(text(r[0]), text(r[1]), text(r[2]), JobTrace(text(r[3]), text(r[4])))
            for r in reply
        ]

    async def repair_leased_sets(self) -> int:
        """Drop stale members of the printers' leased sets (routing load); how many."""
        k = self.keys
        return int(await self._run("repair_leased", [k.printers], [k.prefix]))
