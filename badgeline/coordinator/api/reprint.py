"""Reprint: a deliberate second badge, as a new job linked to the original.

The original's record is never touched. The new job goes through the same
acceptance gate as a kiosk's (store.accept), under its own idempotency key
`reprint:<job_id>:<n>`, and its history starts with who asked and why.
"""

from __future__ import annotations

import json
import logging

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from badgeline.coordinator.api.context import Coordinator, authenticate
from badgeline.coordinator.api.http import correlation_id, job_id_param, json_response, read_model
from badgeline.coordinator.api.kiosk import SHED_RETRY_AFTER_S, spill_peers
from badgeline.coordinator.api.visibility import owner_of
from badgeline.coordinator.store.jobs import AcceptOutcome
from badgeline.log import job_event
from badgeline.protocol.errors import BadgelineError, ErrorCode
from badgeline.protocol.ids import IDEMPOTENCY_KEY_PATTERN, PRINTER_TARGET_PATTERN
from badgeline.protocol.models import JobView, PrintJob
from badgeline.protocol.states import JobState

routes = web.RouteTableDef()

# The attendee is usually standing at the desk waiting for it: a reprint goes
# ahead of routine check-ins (the seed's "a re-drive at priority 0 jumps the line").
REPRINT_PRIORITY = 0
# A reprint of a job that has not finished would put two badges in flight for
# one request; the operator should cancel, drain or wait instead.
REPRINTABLE = frozenset({JobState.PRINTED, JobState.FAILED, JobState.CANCELED})


class ReprintRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, str_strip_whitespace=True)
    reason: str = Field(min_length=1, max_length=200)
    printer_target: str | None = Field(default=None, pattern=PRINTER_TARGET_PATTERN)
    priority: int = Field(default=REPRINT_PRIORITY, ge=0, le=1000)
    # Chosen by the client once per reprint it means to make: a retry after a lost
    # answer, or a double click, sends it again and gets the same reprint back.
    request_id: str | None = Field(
        default=None, min_length=8, max_length=80, pattern=IDEMPOTENCY_KEY_PATTERN
    )


async def _original(coordinator: Coordinator, job_id: str) -> JobView:
    original = await coordinator.store.get_job(job_id)
    if original is None:
        raise BadgelineError(ErrorCode.NOT_FOUND, f"no job {job_id}")
    if original.state not in REPRINTABLE:
        raise BadgelineError(
            ErrorCode.VALIDATION_FAILED,
            f"job {job_id} is {original.state}: only a printed, failed or canceled job can be "
            "reprinted; wait for it, or cancel it first",
            fields=[{"loc": ["job_id"], "msg": f"job is {original.state}"}],
        )
    return original


async def _note_request(
    coordinator: Coordinator, job_id: str, requested_at: float, actor: str, reason: str,
    original_id: str,
) -> None:  # fmt: skip
    """Put the request first in the new job's history. LPUSH, not RPUSH: an
    agent may lease the job before this lands, and the request came first."""
    entry = {"at": requested_at, "from": None, "to": JobState.QUEUED, "actor": actor,
             "reason": f"reprint of {original_id} requested by {actor}: {reason}"}  # fmt: skip
    await coordinator.store.redis.lpush(coordinator.store.keys.history(job_id), json.dumps(entry))


async def _reprint_number(
    coordinator: Coordinator, original_id: str, request_id: str | None
) -> int:
    """The n of the reprint's key `reprint:<job_id>:<n>`: the next one, or the one
    this `request_id` was given before. Two racing requests with one id may both
    draw a number; SET NX keeps the first, and both then use it, so the dedupe
    gate lets one job through (the other number is skipped, never used)."""
    store = coordinator.store
    claim = store.keys.reprint_request(original_id, request_id) if request_id else None
    if claim is not None and (given := await store.redis.get(claim)) is not None:
        return int(given)
    n = int(await store.redis.incr(store.keys.reprint_sequence(original_id)))
    if claim is not None:
        window = coordinator.settings.dedupe_window_s
        if not await store.redis.set(claim, n, nx=True, ex=window):
            n = int(await store.redis.get(claim) or n)
    return n


def _refuse(outcome: AcceptOutcome, job: PrintJob, cid: str, request_id: str | None) -> None:
    if outcome.duplicate and request_id is None:
        raise BadgelineError(
            ErrorCode.IDEMPOTENCY_CONFLICT,
            f"the reprint key {job.idempotency_key!r} already names job {outcome.job_id}",
            extra={"job_id": outcome.job_id},
        )
    if outcome.shed:
        raise BadgelineError(
            ErrorCode.QUEUE_FULL,
            f"printer {outcome.printer_id} is at its high-water mark; the reprint was "
            "dead-lettered: redrive it or reprint to another printer",
            extra={"job_id": outcome.job_id, "state": "dead_lettered", "reason": "backpressure",
                   "printer_id": outcome.printer_id, "correlation_id": cid},
            retry_after_s=SHED_RETRY_AFTER_S,
        )  # fmt: skip


@routes.post("/v1/jobs/{job_id}/reprint")
async def reprint(request: web.Request) -> web.Response:
    coordinator, identity = authenticate(request, "operator")
    original_id = job_id_param(request)
    body = await read_model(request, ReprintRequest)
    original = await _original(coordinator, original_id)
    store, cid = coordinator.store, correlation_id(request)
    seconds, micros = await store.redis.time()
    # Milliseconds, as every history entry the scripts write (now_ms): with microseconds
    # this entry could sort after the `accepted` one written in the same millisecond.
    requested_at = (int(seconds) * 1000 + int(micros) // 1000) / 1000
    n = await _reprint_number(coordinator, original_id, body.request_id)
    job = PrintJob(
        attendee_id=original.attendee_id, badge_pdf_ref=original.badge_pdf_ref,
        printer_target=body.printer_target or original.printer_target, priority=body.priority,
        idempotency_key=f"reprint:{original_id}:{n}",
    )  # fmt: skip
    route = coordinator.router.route(job.printer_target)
    # The reprint belongs to the kiosk (and group) of the original: the desk that
    # printed the badge sees its replacement in the attendee's jobs.
    owner = await owner_of(store, original_id)
    try:
        outcome = await store.accept(
            job, route=route, correlation_id=cid, actor=identity.actor,
            reprint_of=original_id, spill_to=spill_peers(coordinator.settings, route.printer_id),
            owner=owner,
        )  # fmt: skip
    except BadgelineError as error:
        if error.code is not ErrorCode.IDEMPOTENCY_CONFLICT or body.request_id is None:
            raise
        raise BadgelineError(
            ErrorCode.IDEMPOTENCY_CONFLICT,
            f"request_id {body.request_id!r} already made reprint {error.extra.get('job_id')} "
            "of this job with another printer_target or priority; a new reprint needs a new "
            "request_id",
            extra=error.extra,
        ) from None
    if not outcome.duplicate:
        await _note_request(coordinator, outcome.job_id, requested_at, identity.actor,
                            body.reason, original_id)  # fmt: skip
    # A repeat of a request_id is the seed's duplicate_suppressed: no second badge.
    event = "duplicate_suppressed" if outcome.duplicate else "job_reprinted"
    job_event(event, level=logging.WARNING if outcome.shed else logging.INFO,
              job_id=outcome.job_id, printer_id=outcome.printer_id,
              idempotency_key=job.idempotency_key, correlation_id=cid, reprint_of=original_id,
              reason=body.reason, actor=identity.actor, state=str(outcome.state))  # fmt: skip
    _refuse(outcome, job, cid, body.request_id)
    view = await store.get_job(outcome.job_id)
    return json_response(view, status=200 if outcome.duplicate else 201)
