"""Operator routes of the core: dead letters, redrive and queue peeks."""

from __future__ import annotations

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from badgeline.coordinator.api.context import authenticate
from badgeline.coordinator.api.http import json_response, query_model, read_model
from badgeline.log import job_event, log_event
from badgeline.protocol.errors import BadgelineError, ErrorCode
from badgeline.protocol.ids import is_printer_id
from badgeline.protocol.models import (
    DeadLetter,
    DeadLetterList,
    RedriveOutcome,
    RedriveRequest,
    RedriveResponse,
)

routes = web.RouteTableDef()


class PeekQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")
    limit: int = Field(default=20, ge=1, le=500)


@routes.get("/v1/dead-letters")
async def list_dead_letters(request: web.Request) -> web.Response:
    coordinator, _ = authenticate(request, "operator")
    letters = []
    for job_id in await coordinator.store.jobs.dead_letter_ids():
        view = await coordinator.store.jobs.get(job_id)
        if view is None:
            continue
        last = view.history[-1] if view.history else None
        letters.append(
            DeadLetter(
                job_id=job_id, reason=last.reason if last else "", printer_id=view.printer_id,
                idempotency_key=view.idempotency_key,
                correlation_id=await coordinator.store.jobs.correlation_id_of(job_id),
                dead_lettered_at=last.at if last else view.updated_at,
            )
        )  # fmt: skip
    return json_response(DeadLetterList(dead_letters=letters))


@routes.post("/v1/dead-letters/redrive")
async def redrive(request: web.Request) -> web.Response:
    coordinator, identity = authenticate(request, "operator")
    body = await read_model(request, RedriveRequest)
    job_ids = body.ids if body.ids is not None else await coordinator.store.jobs.dead_letter_ids()
    # A job whose printer is dead goes where that printer's failover sends work: its pool.
    candidates = await coordinator.failover.candidates_by_printer()
    results = []
    for job_id in job_ids:
        outcome = await coordinator.store.jobs.redrive(job_id, identity.actor, candidates)
        if outcome.trace is None:
            log_event("dead_letter_redriven", job_id=job_id, outcome=outcome.outcome,
                      detail=outcome.detail)  # fmt: skip
        else:
            job_event("dead_letter_redriven", job_id=job_id, printer_id=outcome.printer_id,
                      idempotency_key=outcome.trace.idempotency_key,
                      correlation_id=outcome.trace.correlation_id, outcome=outcome.outcome,
                      detail=outcome.detail)  # fmt: skip
        results.append(
            RedriveOutcome(job_id=job_id, outcome=outcome.outcome, detail=outcome.detail)  # type: ignore[arg-type]
        )
    return json_response(RedriveResponse(results=results))


@routes.get("/v1/queues/{printer_id}")
async def peek_queue(request: web.Request) -> web.Response:
    coordinator, _ = authenticate(request, "operator")
    printer_id = request.match_info["printer_id"]
    if not is_printer_id(printer_id):
        raise BadgelineError(ErrorCode.NOT_FOUND, f"{printer_id!r} is not a printer id")
    query = query_model(request, PeekQuery)
    job_ids = await coordinator.store.jobs.peek_queue(printer_id, query.limit)
    jobs = [view for job_id in job_ids if (view := await coordinator.store.jobs.get(job_id))]
    return json_response({
        "printer_id": printer_id,
        "depth": await coordinator.store.jobs.queue_depth(printer_id),
        "jobs": [j.model_dump(mode="json", by_alias=True, exclude={"history"}) for j in jobs],
    })  # fmt: skip
