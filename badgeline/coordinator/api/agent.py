"""Agent routes: heartbeat, lease long-poll, start grant and ack.

Every route is bound to the printer id in the path, and an agent token only
works for its own printer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from badgeline.coordinator.api.auth import require_printer
from badgeline.coordinator.api.context import Coordinator, authenticate
from badgeline.coordinator.api.http import job_id_param, json_response, query_model, read_model
from badgeline.coordinator.api.observations import observe_printed
from badgeline.coordinator.control.health import probe_verdict
from badgeline.log import job_event, log_event
from badgeline.protocol.errors import BadgelineError, ErrorCode
from badgeline.protocol.ids import is_printer_id
from badgeline.protocol.models import (
    AckRequest,
    AckResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    LeaseResponse,
    RenewRequest,
    RenewResponse,
    StartRequest,
    StartResponse,
)

routes = web.RouteTableDef()

# Look again a hair after a pause's end, not on it: the script counts whole
# milliseconds, and a look that lands just before the end finds it still paused.
PAUSE_END_SLACK_S = 0.005


class LeaseQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")
    wait: float = Field(default=0, ge=0, le=120)
    max: int = Field(default=1, ge=1, le=50)


def _agent(request: web.Request) -> tuple[Coordinator, str, str]:
    coordinator, identity = authenticate(request)
    printer_id = request.match_info["printer_id"]
    if not is_printer_id(printer_id):
        raise BadgelineError(ErrorCode.NOT_FOUND, f"{printer_id!r} is not a printer id")
    require_printer(identity, printer_id)
    return coordinator, printer_id, identity.actor


@routes.post("/v1/agents/{printer_id}/heartbeat")
async def heartbeat(request: web.Request) -> web.Response:
    coordinator, printer_id, _ = _agent(request)
    beat = await read_model(request, HeartbeatRequest)
    outcome = await coordinator.store.printers.heartbeat(
        printer_id, beat, probe_verdict(beat.health)
    )
    if outcome.changed:
        log_event("printer_state_changed", logging.WARNING, printer_id=printer_id,
                  previous=outcome.previous_state, state=str(outcome.state),
                  health=beat.health.model_dump(mode="json"))  # fmt: skip
        coordinator.monitor_wakeup.set()
    if outcome.paper != outcome.previous_paper:  # the script recorded the alert event
        level = {"low": logging.WARNING, "out": logging.ERROR}.get(outcome.paper, logging.INFO)
        log_event(f"printer_paper_{outcome.paper}", level, printer_id=printer_id,
                  previous=outcome.previous_paper)  # fmt: skip
    return json_response(
        HeartbeatResponse(
            state=outcome.state,
            paused=outcome.paused,
            heartbeat_interval_s=coordinator.settings.heartbeat_interval_s,
        )
    )


@routes.post("/v1/agents/{printer_id}/lease")
async def lease(request: web.Request) -> web.Response:
    coordinator, printer_id, actor = _agent(request)
    query = query_model(request, LeaseQuery)
    wait_s = min(query.wait, coordinator.settings.lease_max_wait_s)
    max_jobs = min(query.max, coordinator.settings.lease_max_jobs)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_s
    while True:
        with coordinator.wakeups.waiter(printer_id) as woken:
            # An agent that hung up must not be handed jobs it will never see:
            # they would sit leased until the lease expires.
            if request.transport is None or request.transport.is_closing():
                return json_response(LeaseResponse(jobs=[]))
            outcome = await coordinator.store.leases.lease(printer_id, max_jobs, actor)
            jobs = outcome.jobs
            remaining = deadline - loop.time()
            if jobs or remaining <= 0 or coordinator.wakeups.closing:
                break
            if outcome.pause_left_s > 0:
                # A timed pause runs out with no wake-up (nothing publishes then; pause
                # and resume do): look again when it ends. Read from Redis on every
                # round, so it holds whichever replica paused or will resume it.
                remaining = min(remaining, outcome.pause_left_s + PAUSE_END_SLACK_S)
            # asyncio.timeout, not wait_for: on Python 3.11 wait_for runs the wait in
            # a task of its own, one more per parked long-poll.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(remaining):
                    await woken.wait()
    for leased in jobs:
        job_event("job_leased", job_id=leased.job_id, printer_id=printer_id,
                  idempotency_key=leased.job.idempotency_key,
                  correlation_id=leased.job.correlation_id, lease_id=leased.lease_id)  # fmt: skip
    # Each payload goes out as it was stored (store/leases.py builds it unvalidated):
    # one the current model would type differently is the agent's to fail, so the
    # serializer's warnings about it are expected, not a bug to report.
    return json_response(LeaseResponse(jobs=jobs).model_dump(mode="json", warnings=False))


@routes.post("/v1/agents/{printer_id}/jobs/{job_id}/start")
async def start(request: web.Request) -> web.Response:
    coordinator, printer_id, actor = _agent(request)
    job_id = job_id_param(request)
    body = await read_model(request, StartRequest)
    outcome = await coordinator.store.leases.grant_start(printer_id, job_id, body.lease_id, actor)
    trace: dict[str, Any] = {
        "job_id": job_id, "printer_id": printer_id, "lease_id": body.lease_id,
        "idempotency_key": outcome.trace.idempotency_key,
        "correlation_id": outcome.trace.correlation_id,
    }  # fmt: skip
    if not outcome.granted:
        log_event("start_refused", logging.WARNING, reason=outcome.reason, **trace)
        raise BadgelineError(
            ErrorCode.START_REFUSED,
            f"start of {job_id} refused: {outcome.reason}; do not print it",
            extra={"granted": False, "reason": outcome.reason},
        )
    if not outcome.repeated:
        log_event("start_granted", fence=outcome.fence, **trace)
    return json_response(StartResponse(granted=True, fence=outcome.fence))


@routes.post("/v1/agents/{printer_id}/jobs/{job_id}/renew")
async def renew(request: web.Request) -> web.Response:
    """A badge waiting behind a slow printer keeps its lease (and its place)."""
    coordinator, printer_id, _ = _agent(request)
    job_id = job_id_param(request)
    body = await read_model(request, RenewRequest)
    state = await coordinator.store.leases.renew(printer_id, job_id, body.lease_id)
    ttl = coordinator.settings.lease_ttl_s
    if state is not None:
        log_event("lease_not_renewed", logging.WARNING, job_id=job_id, printer_id=printer_id,
                  lease_id=body.lease_id, state=str(state))  # fmt: skip
    return json_response(RenewResponse(renewed=state is None, lease_ttl_s=ttl, state=state))


@routes.post("/v1/agents/{printer_id}/jobs/{job_id}/ack")
async def ack(request: web.Request) -> web.Response:
    coordinator, printer_id, actor = _agent(request)
    job_id = job_id_param(request)
    body = await read_model(request, AckRequest)
    outcome = await coordinator.store.leases.ack(printer_id, job_id, body, actor)
    observe_printed(request.app, outcome)
    if outcome.recorded:
        level = logging.INFO if body.result == "printed" else logging.WARNING
        job_event(f"job_ack_{body.result}", level=level, job_id=job_id, printer_id=printer_id,
                  idempotency_key=outcome.trace.idempotency_key,
                  correlation_id=outcome.trace.correlation_id, lease_id=body.lease_id,
                  fence=body.fence, state=str(outcome.state), error=body.error)  # fmt: skip
    elif outcome.stray:
        # Answered 200 all the same: an error would only make the agent retry forever.
        log_event("stray_ack", logging.WARNING, job_id=job_id, printer_id=printer_id,
                  lease_id=body.lease_id, reason="no start was granted to this lease")  # fmt: skip
    else:
        log_event("ack_repeated", job_id=job_id, printer_id=printer_id, lease_id=body.lease_id)
    return json_response(AckResponse(job_id=job_id, state=outcome.state, recorded=outcome.recorded))
