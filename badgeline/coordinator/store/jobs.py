"""Jobs in Redis: acceptance, reads, cancel, dead letters and redrive.

Every state change is one Lua script call (scripts/<op>-<nkeys>.lua); this module
turns their replies (small integer codes, see each script's header) into typed
outcomes and `BadgelineError`s, so no caller sees Redis.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import dataclass
from typing import Any

from badgeline.coordinator.store.records import (
    OWNER_FIELDS,
    IdempotencyConflict,
    JobOwner,
    JobTrace,
    Records,
    text,
)
from badgeline.protocol.errors import BadgelineError, ErrorCode
from badgeline.protocol.models import JobView, PrintJob
from badgeline.protocol.states import JobState

# What json.dumps(..., sort_keys=True, separators=(",", ":")) uses, built once:
# json.dumps builds a new encoder per call when given any option.
_CANONICAL_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"))


def payload_hash(job: PrintJob) -> str:
    """The dedupe gate compares this: same key + same payload = the same job. Unset
    optional fields are left out, so a job without them hashes as it always has."""
    canonical = _CANONICAL_JSON.encode(job.model_dump(mode="json", exclude_none=True))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:32]


def new_job_id() -> str:
    return "job_" + secrets.token_hex(8)


@dataclass(frozen=True)
class Route:
    """Where a job goes: its named printer, or a choice among candidates that the
    accept script makes in the same step as the enqueue (scripts/accept-7.lua)."""

    printer_id: str  # '' when the script chooses
    candidates: str = ""  # a JSON list or '*' (every printer of the venue); '' when named
    label: str = ""  # the label a candidate must carry ('' for any)
    stale_ms: int = 0  # heartbeat age past which a printer takes no new routed work
    pool: str | None = None
    # A named printer the config does not name must have reported (a heartbeat), else
    # the job is refused as naming an unknown printer (a typo would wait for ever).
    must_be_reported: bool = False

    def script_args(self) -> list[str | int]:
        return [self.candidates, self.label, self.stale_ms]


def no_printer_available(route: Route) -> BadgelineError:
    return BadgelineError(
        ErrorCode.NO_PRINTER_AVAILABLE,
        f"no healthy printer in pool {route.pool!r} right now; retry or name a printer",
        extra={"pool": route.pool},
    )


def unknown_printer(printer_id: str) -> BadgelineError:
    return BadgelineError(
        ErrorCode.UNKNOWN_PRINTER,
        f"no agent has ever reported {printer_id} and the coordinator's config does not name "
        "it (known_printers, pools): check the printer id, or pre-register the printer",
        fields=[{"loc": ["printer_target"], "msg": f"unknown printer {printer_id}"}],
        extra={"printer_id": printer_id},
    )


def printer_rejecting(printer_id: str) -> BadgelineError:
    return BadgelineError(
        ErrorCode.PRINTER_REJECTING,
        f"printer {printer_id} is rejecting new jobs (an operator set it so; its queue still "
        "prints): target another printer or a pool",
        extra={"printer_id": printer_id},
    )


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
class RedriveOutcome:
    job_id: str
    outcome: str
    detail: str | None = None
    printer_id: str = ""
    trace: JobTrace | None = None


class JobRecords(Records):
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
                self.settings.high_water_mark, job.payload_json(), route.printer_id,
                correlation_id, actor, reprint_of or "", k.wake_channel,
                spill_to if isinstance(spill_to, str) else json.dumps(spill_to),
                *route.script_args(), owner.kiosk, owner.group,
                "1" if route.must_be_reported else "",
            ],
        )  # fmt: skip
        code, found_id = int(reply[0]), text(reply[1])
        found_owner = JobOwner.from_fields(*reply[5:8]) if code in (2, -1) else owner
        if code == -1:
            raise IdempotencyConflict(
                f"idempotency_key {job.idempotency_key!r} already names job {found_id} "
                "with a different payload; use a new key for a different badge",
                found_id, found_owner,
            )  # fmt: skip
        if code == -3:
            raise no_printer_available(route)
        if code == -4:
            raise unknown_printer(route.printer_id)
        if code == -5:
            raise printer_rejecting(route.printer_id)
        return AcceptOutcome(
            job_id=found_id, state=JobState(text(reply[2])), printer_id=text(reply[3]),
            position=int(reply[4]), duplicate=code == 2, shed=code == 3, owner=found_owner,
        )  # fmt: skip

    async def note_first(self, job_id: str, entry: dict[str, Any]) -> None:
        """Put `entry` first in the job's history (a reprint's request: an agent may
        lease the job before this lands, and the request came first)."""
        await self._redis.lpush(self.keys.history(job_id), json.dumps(entry))

    async def reprint_number(self, original_id: str, request_id: str | None) -> int:
        """The n of a reprint's key `reprint:<job_id>:<n>`: the next one, or the one
        this `request_id` was given before. Two racing requests with one id may both
        draw a number; SET NX keeps the first, and both then use it, so the dedupe
        gate lets one job through (the other number is skipped, never used)."""
        redis, k = self._redis, self.keys
        claim = k.reprint_request(original_id, request_id) if request_id else None
        if claim is not None and (given := await redis.get(claim)) is not None:
            return int(given)
        n = int(await redis.incr(k.reprint_sequence(original_id)))
        window = self.settings.dedupe_window_s
        if claim is not None and not await redis.set(claim, n, nx=True, ex=window):
            n = int(await redis.get(claim) or n)
        return n

    # ------------------------------------------------------------------ read

    async def get(self, job_id: str) -> JobView | None:
        return found[0] if (found := await self.get_owned(job_id)) else None

    async def get_owned(self, job_id: str) -> tuple[JobView, JobOwner] | None:
        """The job and who submitted it, in one round trip."""
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.hgetall(self.keys.job(job_id))
            pipe.lrange(self.keys.history(job_id), 0, -1)
            pipe.scard(self.keys.prints(job_id))
            fields, history, prints = await pipe.execute()
        if not fields:
            return None
        return job_view(fields, history, prints), JobOwner.from_hash(fields)

    async def owner_of(self, job_id: str) -> JobOwner | None:
        """The job's submitter; None when there is no such job."""
        key = self.keys.job(job_id)
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.exists(key)
            pipe.hmget(key, list(OWNER_FIELDS))
            exists, fields = await pipe.execute()
        return JobOwner.from_fields(*fields) if exists else None

    async def owners_of(self, job_ids: list[str]) -> list[JobOwner]:
        """The submitters of these jobs, in their order, in one round trip."""
        async with self._redis.pipeline(transaction=False) as pipe:
            for job_id in job_ids:
                pipe.hmget(self.keys.job(job_id), list(OWNER_FIELDS))
            return [JobOwner.from_fields(*fields) for fields in await pipe.execute()]

    async def traces_of(self, job_ids: list[str]) -> list[JobTrace]:
        """The ids every log line about these jobs carries, in their order."""
        async with self._redis.pipeline(transaction=False) as pipe:
            for job_id in job_ids:
                pipe.hmget(self.keys.job(job_id), ["idempotency_key", "correlation_id"])
            return [JobTrace(text(key), text(cid)) for key, cid in await pipe.execute()]

    async def for_attendee(self, attendee_id: str) -> list[JobView]:
        members = await self._redis.smembers(self.keys.attendee(attendee_id))
        views = [await self.get(job_id) for job_id in sorted(text(j) for j in members)]
        return sorted((v for v in views if v), key=lambda v: v.created_at)

    async def correlation_id_of(self, job_id: str) -> str:
        return text(await self._redis.hget(self.keys.job(job_id), "correlation_id"))

    async def queue_depth(self, printer_id: str) -> int:
        return int(await self._redis.zcard(self.keys.queue(printer_id)))

    async def peek_queue(self, printer_id: str, limit: int) -> list[str]:
        members = await self._redis.zrange(self.keys.queue(printer_id), 0, limit - 1)
        return [text(m) for m in members]

    async def queue_page(
        self, printer_id: str, after: tuple[float, str] | None, count: int
    ) -> list[tuple[str, float]]:
        """(job id, score) in print order, after the position `after`."""
        return await self._zset_after(self.keys.queue(printer_id), after, count)

    async def parked(self, limit: int) -> tuple[int, list[str]]:
        """How many jobs wait parked for a healthy printer, and the first `limit` ids."""
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.zcard(self.keys.parked)
            pipe.zrange(self.keys.parked, 0, limit - 1)
            count, ids = await pipe.execute()
        return int(count), [text(j) for j in ids]

    # ------------------------------------------------------------------ cancel, dead letters

    async def cancel(self, job_id: str, actor: str, reason: str) -> JobState:
        k = self.keys
        reply = await self._run(
            "cancel", [k.job(job_id), k.leases, k.dead_letters], [k.prefix, actor, reason]
        )
        code, state = int(reply[0]), text(reply[1])
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

    async def dead_letter_ids(self, limit: int = 1000) -> list[str]:
        return [text(m) for m in await self._redis.zrange(self.keys.dead_letters, 0, limit - 1)]

    async def dead_letter_page(
        self, after: tuple[float, str] | None, count: int
    ) -> list[tuple[str, float]]:
        """(job id, dead-lettered at ms), oldest first, after the position `after`."""
        return await self._zset_after(self.keys.dead_letters, after, count)

    async def dead_letter_count(self) -> int:
        return int(await self._redis.zcard(self.keys.dead_letters))

    async def redrive(self, job_id: str, actor: str, candidates_by_printer: str) -> RedriveOutcome:
        """Queue a dead letter again through the dedupe gate. `candidates_by_printer`
        (FailoverController.candidates_by_printer) says where it may go if its printer
        is dead: its pool's printers, else any."""
        k = self.keys
        fields = await self._redis.hmget(
            k.job(job_id), ["idempotency_key", "printer_id", "correlation_id"]
        )
        if fields[0] is None:
            return RedriveOutcome(job_id, "not_dead_lettered", "no such job")
        trace = JobTrace(text(fields[0]), text(fields[2]))
        reply = await self._run(
            "redrive",
            [k.job(job_id), k.idempotency(text(fields[0])), k.dead_letters, k.sequence],
            [k.prefix, self.settings.dedupe_window_s, self.settings.high_water_mark, actor,
             k.wake_channel, candidates_by_printer],
        )  # fmt: skip
        code, detail = int(reply[0]), text(reply[1])
        outcomes = {1: "queued", 2: "suppressed", 3: "still_shed", 4: "refused"}
        outcome = outcomes.get(code, "not_dead_lettered")
        if outcome == "refused":
            detail = (f"it failed for good ({detail or 'permanent'}): no retry can print it;"
                      " fix the badge and submit it as a new job (or reprint it)")  # fmt: skip
        return RedriveOutcome(job_id, outcome, detail, text(fields[1]), trace)


def job_view(fields: dict[Any, Any], history: list[Any], prints: int) -> JobView:
    f = {text(key): text(value) for key, value in fields.items()}
    entries = [json.loads(text(raw)) for raw in history]
    return JobView.model_validate(
        {
            **json.loads(f["payload"]),  # the job as accepted: PrintJob's fields
            "job_id": f["job_id"],
            "state": f["state"],
            "printer_id": f["printer_id"],
            "attempts": int(f.get("attempts") or 0),
            "possible_duplicate": f.get("possible_duplicate") == "1",
            "reprint_of": f.get("reprint_of") or None,
            "created_at": int(f["created_ms"]) / 1000,
            "updated_at": int(f.get("updated_ms") or f["created_ms"]) / 1000,
            "last_error": f.get("last_error") or None,
            "failure_reason": f.get("failure_reason") or None,
            "failed_for_good": f.get("dead_reason") == "permanent",
            "prints": prints,
            "expires_at": int(f["expires_ms"]) / 1000 if f.get("expires_ms") else None,
            "history": entries,
        }
    )
