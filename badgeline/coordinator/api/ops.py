"""Operator routes of the core: dead letters, redrive, queue peeks, and the jobs
waiting in a queue: move one, cancel a printer's."""

from __future__ import annotations

from aiohttp import web
from pydantic import Field

from badgeline.coordinator.api.context import authenticate
from badgeline.coordinator.api.http import (
    correlation_id,
    job_id_param,
    json_response,
    query_model,
    read_model,
)
from badgeline.coordinator.api.paging import (
    MAX_LIMIT,
    PageQuery,
    Position,
    decode_cursor,
    page_from,
)
from badgeline.log import job_event, log_event
from badgeline.protocol.errors import BadgelineError, ErrorCode
from badgeline.protocol.ids import is_printer_id
from badgeline.protocol.models import (
    CanceledJobs,
    DeadLetter,
    JobSummary,
    MoveRequest,
    MoveResult,
    RedriveOutcome,
    RedriveRequest,
    RedriveResponse,
)
from badgeline.protocol.pages import DeadLetterPage, QueuePeek
from badgeline.protocol.states import JobState

routes = web.RouteTableDef()


class PeekQuery(PageQuery):
    # The head of a queue is what an operator looks at first.
    limit: int = Field(default=20, ge=1, le=MAX_LIMIT,
                       description=f"jobs per page, 1-{MAX_LIMIT}")  # fmt: skip


# A sorted set's position: the last item's score and member.
SCORED = (float, str)


def _scored(position: Position | None) -> tuple[float, str] | None:
    return (float(position[0]), str(position[1])) if position is not None else None


@routes.get("/v1/dead-letters")
async def list_dead_letters(request: web.Request) -> web.Response:
    coordinator, _ = authenticate(request, "operator")
    query = query_model(request, PageQuery)
    after = _scored(decode_cursor(query.after, "dead-letters", SCORED))
    rows = await coordinator.store.jobs.dead_letter_page(after, query.limit + 1)
    page = page_from(rows, lambda row: [row[1], row[0]], "dead-letters", query.limit)
    letters = []
    for job_id, _ in page.items:
        view = await coordinator.store.jobs.get(job_id)
        if view is None:  # retired between the two reads
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
    return json_response(DeadLetterPage(items=letters, next=page.next))


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


def _printer_id(request: web.Request) -> str:
    printer_id = request.match_info["printer_id"]
    if not is_printer_id(printer_id):
        raise BadgelineError(ErrorCode.NOT_FOUND, f"{printer_id!r} is not a printer id")
    return printer_id


@routes.get("/v1/queues/{printer_id}")
async def peek_queue(request: web.Request) -> web.Response:
    coordinator, _ = authenticate(request, "operator")
    printer_id = _printer_id(request)
    query = query_model(request, PeekQuery)
    tag = f"queue:{printer_id}"
    after = _scored(decode_cursor(query.after, tag, SCORED))
    rows = await coordinator.store.jobs.queue_page(printer_id, after, query.limit + 1)
    page = page_from(rows, lambda row: [row[1], row[0]], tag, query.limit)
    jobs = [view for job_id, _ in page.items if (view := await coordinator.store.jobs.get(job_id))]
    return json_response(QueuePeek(
        printer_id=printer_id, depth=await coordinator.store.jobs.queue_depth(printer_id),
        items=[JobSummary.model_validate(j.model_dump(exclude={"history"})) for j in jobs],
        next=page.next,
    ))  # fmt: skip


@routes.post("/v1/queues/{printer_id}/cancel")
async def cancel_queue(request: web.Request) -> web.Response:
    """Cancel every job of the printer that no printer has started (queued, or leased
    by its agent and not yet started); jobs accepted after the call are not touched."""
    coordinator, identity = authenticate(request, "operator")
    printer_id = _printer_id(request)
    canceled = await coordinator.store.waiting.cancel_waiting(
        printer_id, identity.actor, f"canceled by {identity.actor} with all of {printer_id}'s"
        " waiting jobs",
    )  # fmt: skip
    for job_id, trace in canceled:
        job_event("job_canceled", job_id=job_id, printer_id=printer_id,
                  idempotency_key=trace.idempotency_key, correlation_id=trace.correlation_id,
                  request_correlation_id=correlation_id(request), actor=identity.actor)  # fmt: skip
    log_event("queue_canceled", printer_id=printer_id, canceled=len(canceled),
              actor=identity.actor)  # fmt: skip
    return json_response(CanceledJobs(printer_id=printer_id, canceled=[j for j, _ in canceled]))


@routes.post("/v1/jobs/{job_id}/move")
async def move_job(request: web.Request) -> web.Response:
    """Move a job no printer has started to another printer or pool, keeping its id,
    idempotency key and place in print order; its history records the move."""
    coordinator, identity = authenticate(request, "operator")
    job_id = job_id_param(request)
    body = await read_model(request, MoveRequest)
    route = coordinator.router.route(body.printer_target)
    outcome = await coordinator.store.waiting.move(job_id, route, identity.actor)
    view = await coordinator.store.jobs.get(job_id)
    if outcome.moved and view is not None:
        job_event("job_moved", job_id=job_id, printer_id=outcome.printer_id,
                  idempotency_key=view.idempotency_key,
                  correlation_id=await coordinator.store.jobs.correlation_id_of(job_id),
                  moved_from=outcome.source, actor=identity.actor,
                  request_correlation_id=correlation_id(request))  # fmt: skip
    return json_response(MoveResult(
        job_id=job_id, state=view.state if view is not None else JobState.QUEUED,
        printer_id=outcome.printer_id, moved_from=outcome.source, moved=outcome.moved,
    ))  # fmt: skip
