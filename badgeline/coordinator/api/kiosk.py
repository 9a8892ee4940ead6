"""Kiosk routes: submit, look up and cancel badge print jobs."""

from __future__ import annotations

import logging
from typing import Any

from aiohttp import web
from pydantic import Field

from badgeline.coordinator.api.auth import Identity
from badgeline.coordinator.api.context import authenticate
from badgeline.coordinator.api.http import (
    correlation_id,
    job_id_param,
    json_response,
    query_model,
    read_model,
)
from badgeline.coordinator.api.paging import PageQuery, page_of
from badgeline.coordinator.api.visibility import (
    check_visible,
    idempotency_key_taken,
    may_see,
    submitter,
    visible_job,
    visible_jobs,
)
from badgeline.coordinator.control.routing import SHED_RETRY_AFTER_S, spill_peers
from badgeline.coordinator.store.records import IdempotencyConflict
from badgeline.log import job_event, log_event
from badgeline.protocol.errors import BadgelineError, ErrorCode
from badgeline.protocol.ids import ATTENDEE_ID_PATTERN
from badgeline.protocol.models import CancelResult, JobView, PrintJob, SubmitAccepted
from badgeline.protocol.pages import JobPage

routes = web.RouteTableDef()


class AttendeeQuery(PageQuery):
    attendee_id: str = Field(min_length=4, max_length=48, pattern=ATTENDEE_ID_PATTERN)


@routes.post("/v1/jobs")
async def submit_job(request: web.Request) -> web.Response:
    coordinator, identity = authenticate(request, "kiosk", "operator")
    job = await read_model(request, PrintJob)
    _check_deadline(job, coordinator.settings.dedupe_window_s)
    route = coordinator.router.route(job.printer_target)
    cid = correlation_id(request)
    try:
        outcome = await coordinator.store.jobs.accept(
            job, route=route, correlation_id=cid, actor=identity.actor,
            spill_to=spill_peers(coordinator.settings, route.printer_id),
            owner=submitter(identity),
        )  # fmt: skip
    except IdempotencyConflict as conflict:
        if not may_see(identity, conflict.owner):
            raise _key_taken(job.idempotency_key, identity, cid) from None
        raise
    if outcome.duplicate and not may_see(identity, outcome.owner):
        raise _key_taken(job.idempotency_key, identity, cid)
    printer_id = outcome.printer_id
    trace: dict[str, Any] = {
        "job_id": outcome.job_id, "printer_id": outcome.printer_id,
        "idempotency_key": job.idempotency_key, "correlation_id": cid,
    }  # fmt: skip
    if outcome.shed:
        log_event("queue_backpressure", logging.WARNING, depth=outcome.position, **trace)
        raise BadgelineError(
            ErrorCode.QUEUE_FULL,
            f"printer {printer_id} has {outcome.position} jobs waiting (its high-water mark); "
            f"the job was dead-lettered, retry in {SHED_RETRY_AFTER_S} s or target another printer",
            extra={"job_id": outcome.job_id, "state": "dead_lettered", "reason": "backpressure",
                   "printer_id": printer_id, "correlation_id": cid},
            retry_after_s=SHED_RETRY_AFTER_S,
        )  # fmt: skip
    if outcome.duplicate:
        log_event("duplicate_suppressed", state=str(outcome.state), **trace)
    else:
        log_event("job_enqueued", priority=job.priority, position=outcome.position, **trace)
    body = SubmitAccepted(
        job_id=outcome.job_id, state=outcome.state, printer_id=outcome.printer_id,
        position=outcome.position, duplicate=outcome.duplicate, correlation_id=cid,
    )  # fmt: skip
    return json_response(body, status=200 if outcome.duplicate else 201)


def _check_deadline(job: PrintJob, dedupe_window_s: int) -> None:
    # A job that could still start after its key's dedupe window (counted from its
    # closing) is not what a deadline is for; and a longer one is surely a typo.
    if job.expire_after_s is not None and job.expire_after_s > dedupe_window_s:
        raise BadgelineError(
            ErrorCode.VALIDATION_FAILED,
            f"expire_after_s is {job.expire_after_s}: at most the coordinator's dedupe window, "
            f"{dedupe_window_s} s (dedupe_window_s); leave it out for no deadline",
            fields=[{"loc": ["expire_after_s"],
                     "msg": f"must be at most {dedupe_window_s} (dedupe_window_s)"}],
        )  # fmt: skip


def _key_taken(idempotency_key: str, identity: Identity, cid: str) -> BadgelineError:
    # The other kiosk's job id stays out of the log line too: it goes to the same desk.
    log_event("idempotency_key_taken", logging.WARNING, idempotency_key=idempotency_key,
              actor=identity.actor, correlation_id=cid)  # fmt: skip
    return idempotency_key_taken(idempotency_key)


@routes.get("/v1/jobs/{job_id}")
async def get_job(request: web.Request) -> web.Response:
    coordinator, identity = authenticate(request, "kiosk", "operator")
    job_id = job_id_param(request)
    view = await visible_job(coordinator.store, identity, job_id, coordinator.audit_export)
    return json_response(view)


@routes.get("/v1/jobs")
async def list_jobs(request: web.Request) -> web.Response:
    coordinator, identity = authenticate(request, "kiosk", "operator")
    query = query_model(request, AttendeeQuery)
    jobs = await coordinator.store.jobs.for_attendee(query.attendee_id)
    visible = await visible_jobs(coordinator.store, identity, jobs)
    page = page_of(visible, _arrival, f"jobs:{query.attendee_id}", query, (float, str))
    return json_response(JobPage(items=page.items, next=page.next))


def _arrival(view: JobView) -> list[object]:
    """An attendee's jobs in the order they were submitted (the id breaks a tie)."""
    return [view.created_at, view.job_id]


@routes.post("/v1/jobs/{job_id}/cancel")
async def cancel_job(request: web.Request) -> web.Response:
    coordinator, identity = authenticate(request, "kiosk", "operator")
    job_id = job_id_param(request)
    await check_visible(coordinator.store, identity, job_id)
    state = await coordinator.store.jobs.cancel(
        job_id, identity.actor, "canceled by " + identity.actor
    )
    view = await coordinator.store.jobs.get(job_id)
    if view is not None:
        # The job's own correlation id, as on every other line about it; the
        # cancel request's id goes alongside.
        job_event(
            "job_canceled", job_id=job_id, printer_id=view.printer_id,
            idempotency_key=view.idempotency_key,
            correlation_id=await coordinator.store.jobs.correlation_id_of(job_id),
            request_correlation_id=correlation_id(request),
        )  # fmt: skip
    return json_response(CancelResult(job_id=job_id, state=state))
