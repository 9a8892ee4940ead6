"""Reprint: a deliberate second badge, as a new job linked to the original.

An operator reprints any job; a kiosk the jobs it may see (api/visibility.py).

The original's record is never touched. The new job goes through the same
acceptance gate as a kiosk's (store.accept), under its own idempotency key
`reprint:<job_id>:<n>`, and its history starts with who asked and why.
"""

from __future__ import annotations

import logging

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from badgeline.coordinator.api.context import Coordinator, authenticate
from badgeline.coordinator.api.http import correlation_id, job_id_param, json_response, read_model
from badgeline.coordinator.api.visibility import check_visible
from badgeline.coordinator.control.routing import SHED_RETRY_AFTER_S, spill_peers
from badgeline.coordinator.store.jobs import AcceptOutcome
from badgeline.log import job_event
from badgeline.protocol.errors import BadgelineError, ErrorCode
from badgeline.protocol.ids import IDEMPOTENCY_KEY_PATTERN, PRINTER_TARGET_PATTERN
from badgeline.protocol.models import JobView, PrintJob
from badgeline.protocol.states import JobState

routes = web.RouteTableDef()

# The attendee is usually standing at the desk waiting for it: a reprint goes
# ahead of routine check-ins: priority 0 jumps the line.
REPRINT_PRIORITY = 0
# A reprint of a job that has not finished would put two badges in flight for
# one request; the operator should cancel, drain or wait instead.
# An expired job is reprintable: the attendee came back after its deadline.
REPRINTABLE = frozenset({JobState.PRINTED, JobState.FAILED, JobState.CANCELED, JobState.EXPIRED})


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
    original = await coordinator.store.jobs.get(job_id)
    if original is None:
        raise BadgelineError(ErrorCode.NOT_FOUND, f"no job {job_id}")
    if original.state not in REPRINTABLE:
        raise BadgelineError(
            ErrorCode.VALIDATION_FAILED,
            f"job {job_id} is {original.state}: only a printed, failed, canceled or expired job "
            "can be reprinted; wait for it, or cancel it first",
            fields=[{"loc": ["job_id"], "msg": f"job is {original.state}"}],
        )
    return original


async def _note_request(
    coordinator: Coordinator, job_id: str, requested_at: float, actor: str, reason: str,
    original_id: str,
) -> None:  # fmt: skip
    """Put the request first in the new job's history."""
    entry = {"at": requested_at, "from": None, "to": JobState.QUEUED, "actor": actor,
             "reason": f"reprint of {original_id} requested by {actor}: {reason}"}  # fmt: skip
    await coordinator.store.jobs.note_first(job_id, entry)


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
    coordinator, identity = authenticate(request, "kiosk", "operator")
    original_id = job_id_param(request)
    body = await read_model(request, ReprintRequest)
    # A kiosk reprints the jobs it may see (its own, its group's): the desk where the
    # attendee stands. Another kiosk's job is the unknown-job 404, as on every job route.
    await check_visible(coordinator.store, identity, original_id)
    original = await _original(coordinator, original_id)
    store, cid = coordinator.store, correlation_id(request)
    # Milliseconds, as every history entry the scripts write (now_ms): with microseconds
    # this entry could sort after the `accepted` one written in the same millisecond.
    requested_at = await store.printers.now_ms() / 1000
    n = await store.jobs.reprint_number(original_id, body.request_id)
    job = PrintJob(
        attendee_id=original.attendee_id, badge_pdf_ref=original.badge_pdf_ref,
        printer_target=body.printer_target or original.printer_target, priority=body.priority,
        idempotency_key=f"reprint:{original_id}:{n}",
    )  # fmt: skip
    route = coordinator.router.route(job.printer_target)
    # The reprint belongs to the kiosk (and group) of the original: the desk that
    # printed the badge sees its replacement in the attendee's jobs.
    owner = await store.jobs.owner_of(original_id)
    try:
        outcome = await store.jobs.accept(
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
    # A repeat of a request_id is a duplicate_suppressed: no second badge.
    event = "duplicate_suppressed" if outcome.duplicate else "job_reprinted"
    job_event(event, level=logging.WARNING if outcome.shed else logging.INFO,
              job_id=outcome.job_id, printer_id=outcome.printer_id,
              idempotency_key=job.idempotency_key, correlation_id=cid, reprint_of=original_id,
              reason=body.reason, actor=identity.actor, state=str(outcome.state))  # fmt: skip
    _refuse(outcome, job, cid, body.request_id)
    view = await store.jobs.get(outcome.job_id)
    return json_response(view, status=200 if outcome.duplicate else 201)
