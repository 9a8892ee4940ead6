"""The Redis store: every job state change is one Lua script call.

This module turns script replies (small integer codes, see each script's header)
into typed results and `BadgelineError`s, so the HTTP layer never sees Redis.
"""

from __future__ import annotations

import hashlib
import json
import random
import secrets
from dataclasses import dataclass
from typing import Any

from badgeline.coordinator.api.visibility import IdempotencyConflict, JobOwner
from badgeline.coordinator.config import CoordinatorSettings
from badgeline.coordinator.control.health import probe_verdict
from badgeline.coordinator.control.routing import Route, no_printer_available
from badgeline.coordinator.store.connection import RedisClient
from badgeline.coordinator.store.keys import VenueKeys
from badgeline.coordinator.store.script_loader import LoadedScript, load_scripts
from badgeline.protocol.errors import BadgelineError, ErrorCode
from badgeline.protocol.failures import is_permanent
from badgeline.protocol.models import AckRequest, HeartbeatRequest, JobView, PrintJob
from badgeline.protocol.states import JobState, PrinterState

# Alert events (paper low/out) kept per venue, newest first.
ALERT_EVENTS_KEPT = 500


# What json.dumps(..., sort_keys=True, separators=(",", ":")) uses, built once:
# json.dumps builds a new encoder per call when given any option.
_CANONICAL_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"))


def payload_hash(job: PrintJob) -> str:
    """The dedupe gate compares this: same key + same payload = the same job."""
    canonical = _CANONICAL_JSON.encode(job.model_dump(mode="json"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:32]


def new_job_id() -> str:
    return "job_" + secrets.token_hex(8)


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


@dataclass(frozen=True)
class AcceptOutcome:
    job_id: str
    state: JobState
    printer_id: str
    position: int
    duplicate: bool
    shed: bool
    owner: JobOwner  # who submitted the job (for a duplicate: the first submission)


@dataclass(frozen=True)
class JobTrace:
    """What every log line about a job carries besides its id."""

    idempotency_key: str
    correlation_id: str


@dataclass(frozen=True)
class LeaseOutcome:
    jobs: list[dict[str, Any]]
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
class RedriveOutcome:
    job_id: str
    outcome: str
    detail: str | None = None
    printer_id: str = ""
    trace: JobTrace | None = None


@dataclass(frozen=True)
class ExpiredLease:
    """A job the lease scanner returned to its queue."""

    job_id: str
    printer_id: str
    lease_id: str
    trace: JobTrace


class JobStore:
    def __init__(self, redis: RedisClient, settings: CoordinatorSettings) -> None:
        self.redis = redis
        self.settings = settings
        self.keys = VenueKeys(settings.venue)
        self.scripts: dict[str, LoadedScript] = load_scripts(redis)

    async def _run(self, operation: str, keys: list[str], args: list[Any]) -> Any:
        return await self.scripts[operation](keys, args)

    # ------------------------------------------------------------------ accept

    async def accept(
        self,
        job: PrintJob,
        *,
        route: Route,
        correlation_id: str,
        actor: str,
        reprint_of: str | None = None,
        spill_to: list[str] | str = "*",
        owner: JobOwner | None = None,
    ) -> AcceptOutcome:
        """Dedupe, route, check backpressure and enqueue, atomically; `owner` submits it."""
        k, owner = self.keys, owner or JobOwner()
        job_id = new_job_id()
        reply = await self._run(
            "accept",
            [
                k.idempotency(job.idempotency_key), k.job(job_id), k.history(job_id),
                k.sequence, k.attendee(job.attendee_id), k.dead_letters, k.printers,
            ],
            [
                k.prefix, job_id, payload_hash(job), self.settings.dedupe_window_s,
                self.settings.high_water_mark, job.priority, job.attendee_id, job.badge_pdf_ref,
                job.printer_target, route.printer_id, job.idempotency_key, correlation_id, actor,
                reprint_of or "", k.wake_channel,
                spill_to if isinstance(spill_to, str) else json.dumps(spill_to),
                *route.script_args(), owner.kiosk, owner.group,
            ],
        )  # fmt: skip
        code, found_id = int(reply[0]), _text(reply[1])
        found_owner = JobOwner.from_fields(*reply[5:8]) if code in (2, -1) else owner
        if code == -1:
            raise IdempotencyConflict(
                f"idempotency_key {job.idempotency_key!r} already names job {found_id} "
                "with a different payload; use a new key for a different badge",
                found_id, found_owner,
            )  # fmt: skip
        if code == -3:
            raise no_printer_available(route)
        return AcceptOutcome(
            job_id=found_id, state=JobState(_text(reply[2])), printer_id=_text(reply[3]),
            position=int(reply[4]), duplicate=code == 2, shed=code == 3, owner=found_owner,
        )  # fmt: skip

    # ------------------------------------------------------------------ read

    async def get_job(self, job_id: str) -> JobView | None:
        return found[0] if (found := await self.get_owned_job(job_id)) else None

    async def get_owned_job(self, job_id: str) -> tuple[JobView, JobOwner] | None:
        """The job and who submitted it (visibility.py), in one round trip."""
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.hgetall(self.keys.job(job_id))
            pipe.lrange(self.keys.history(job_id), 0, -1)
            pipe.scard(self.keys.prints(job_id))
            fields, history, prints = await pipe.execute()
        if not fields:
            return None
        return job_view(fields, history, prints), JobOwner.from_hash(fields)

    async def jobs_for_attendee(self, attendee_id: str) -> list[JobView]:
        members = await self.redis.smembers(self.keys.attendee(attendee_id))
        job_ids = sorted(_text(j) for j in members)
        views = [await self.get_job(job_id) for job_id in job_ids]
        return sorted((v for v in views if v), key=lambda v: v.created_at)

    async def correlation_id_of(self, job_id: str) -> str:
        value = await self.redis.hget(self.keys.job(job_id), "correlation_id")
        return _text(value) if value is not None else ""

    async def queue_depth(self, printer_id: str) -> int:
        depth: int = await self.redis.zcard(self.keys.queue(printer_id))
        return depth

    async def peek_queue(self, printer_id: str, limit: int) -> list[str]:
        members = await self.redis.zrange(self.keys.queue(printer_id), 0, limit - 1)
        return [_text(m) for m in members]

    # ------------------------------------------------------------------ agent side

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
            jobs=[json.loads(_text(item)) for item in reply[1]],
            pause_left_s=int(reply[0]) / 1000,
        )

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
        trace = JobTrace(_text(reply[2]), _text(reply[3]))
        if code == 0:
            return StartOutcome(granted=False, trace=trace, reason=_text(reply[1]))
        return StartOutcome(granted=True, trace=trace, fence=int(reply[1]), repeated=code == 2)

    async def renew_lease(self, printer_id: str, job_id: str, lease_id: str) -> JobState | None:
        """Extend a lease its agent still holds by the lease time; None when renewed, else
        the job's state (the lease is gone: the agent must not start it)."""
        ttl_ms = int(self.settings.lease_ttl_s * 1000)
        reply = await self._run(
            "renew", [self.keys.job(job_id), self.keys.leases], [printer_id, lease_id, ttl_ms]
        )
        if int(reply[0]) == -2:
            raise BadgelineError(ErrorCode.NOT_FOUND, f"no job {job_id}")
        return None if int(reply[0]) == 1 else JobState(_text(reply[1]))

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
            state=JobState(_text(reply[1])),
            recorded=int(reply[0]) == 1,
            trace=JobTrace(_text(reply[2]), _text(reply[3])),
            stray=int(reply[0]) == 3,
            scan_to_print_s=scan_to_print_s,
        )

    async def wake_printer(self, printer_id: str) -> None:
        """Wake the long-polls parked on this printer, on every replica."""
        await self.redis.publish(self.keys.wake_channel, printer_id)

    async def heartbeat(self, printer_id: str, beat: HeartbeatRequest) -> HeartbeatOutcome:
        k = self.keys
        reply = await self._run(
            "heartbeat",
            [k.printer(printer_id), k.printers, k.paper_level(printer_id), k.alert_events],
            [
                printer_id, beat.agent_id, beat.version, beat.health.model_dump_json(),
                json.dumps(beat.journal), json.dumps(beat.labels), probe_verdict(beat.health),
                self.settings.fail_threshold, self.settings.recover_after_healthy,
                str(beat.health.paper), ALERT_EVENTS_KEPT, str(beat.confirmation or ""),
            ],
        )  # fmt: skip
        return HeartbeatOutcome(
            now_ms=int(reply[0]),
            paused=int(reply[1]) > int(reply[0]),
            state=PrinterState(_text(reply[2])),
            previous_state=_text(reply[3]),
            paper=str(beat.health.paper),
            previous_paper=_text(reply[4]),
        )

    # ------------------------------------------------------------------ lifecycle

    async def cancel(self, job_id: str, actor: str, reason: str) -> JobState:
        k = self.keys
        reply = await self._run(
            "cancel", [k.job(job_id), k.leases, k.dead_letters], [k.prefix, actor, reason]
        )
        code, state = int(reply[0]), _text(reply[1])
        if code == -2:
            raise BadgelineError(ErrorCode.NOT_FOUND, f"no job {job_id}")
        if code == -1:
            raise BadgelineError(
                ErrorCode.NOT_CANCELABLE,
                f"job {job_id} is {state}: a job can be canceled only before its printer "
                f"starts it (queued, leased, retrying, parked, held or dead-lettered)",
                extra={"job_id": job_id, "state": state},
            )
        return JobState(state)

    async def expire_leases(self, actor: str, limit: int = 500) -> list[ExpiredLease]:
        k = self.keys
        reply = await self._run(
            "expire_leases", [k.leases], [k.prefix, limit, k.wake_channel, actor]
        )
        return [
            ExpiredLease(_text(r[0]), _text(r[1]), _text(r[2]), JobTrace(_text(r[3]), _text(r[4])))
            for r in reply
        ]

    async def repair_leased_sets(self) -> int:
        """Drop stale members of the printers' leased sets (routing load); how many."""
        k = self.keys
        return int(await self._run("repair_leased", [k.printers], [k.prefix]))

    async def dead_letter_ids(self, limit: int = 1000) -> list[str]:
        return [_text(m) for m in await self.redis.zrange(self.keys.dead_letters, 0, limit - 1)]

    async def redrive(self, job_id: str, actor: str, candidates_by_printer: str) -> RedriveOutcome:
        """Queue a dead letter again through the dedupe gate. `candidates_by_printer`
        (FailoverController.candidates_by_printer) says where it may go if its printer
        is dead: its pool's printers, else any."""
        k = self.keys
        fields = await self.redis.hmget(
            k.job(job_id), ["idempotency_key", "printer_id", "correlation_id"]
        )
        if fields[0] is None:
            return RedriveOutcome(job_id, "not_dead_lettered", "no such job")
        trace = JobTrace(_text(fields[0]), _text(fields[2] or ""))
        reply = await self._run(
            "redrive",
            [k.job(job_id), k.idempotency(_text(fields[0])), k.dead_letters, k.sequence],
            [k.prefix, self.settings.dedupe_window_s, self.settings.high_water_mark, actor,
             k.wake_channel, candidates_by_printer],
        )  # fmt: skip
        code, detail = int(reply[0]), _text(reply[1])
        outcomes = {1: "queued", 2: "suppressed", 3: "still_shed", 4: "refused"}
        outcome = outcomes.get(code, "not_dead_lettered")
        if outcome == "refused":
            detail = (f"it failed for good ({detail or 'permanent'}): no retry can print it;"
                      " fix the badge and submit it as a new job (or reprint it)")  # fmt: skip
        return RedriveOutcome(job_id, outcome, detail, _text(fields[1] or ""), trace)


def job_view(fields: dict[Any, Any], history: list[Any], prints: int) -> JobView:
    f = {_text(key): _text(value) for key, value in fields.items()}
    entries = [json.loads(_text(raw)) for raw in history]
    return JobView.model_validate(
        {
            "job_id": f["job_id"],
            "state": f["state"],
            "attendee_id": f["attendee_id"],
            "badge_pdf_ref": f["badge_pdf_ref"],
            "printer_target": f["printer_target"],
            "printer_id": f["printer_id"],
            "priority": int(f["priority"]),
            "idempotency_key": f["idempotency_key"],
            "attempts": int(f.get("attempts", 0)),
            "possible_duplicate": f.get("possible_duplicate") == "1",
            "reprint_of": f.get("reprint_of") or None,
            "created_at": int(f["created_ms"]) / 1000,
            "updated_at": int(f.get("updated_ms", f["created_ms"])) / 1000,
            "last_error": f.get("last_error") or None,
            "failure_reason": f.get("failure_reason") or None,
            "failed_for_good": f.get("dead_reason") == "permanent",
            "prints": prints,
            "history": entries,
        }
    )
