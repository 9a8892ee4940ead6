"""Bounds on callers: kiosk rate limits and daily quotas, agents' long-polls, slow bodies.

- A kiosk token has a token bucket (`kiosk_rate_per_s`, `kiosk_burst`) over every
  kiosk route, and a daily quota (`kiosk_daily_quota`, or its token's `daily_quota`)
  of jobs accepted per UTC day of the Redis clock. Both live in Redis and are taken
  by one script (rate_limit-2.lua), so every replica shares them. Over either the
  answer is 429 `rate_limited` with `Retry-After`, before the handler runs: nothing
  is written. A quota slot taken by a submit that did not create a job (duplicate,
  refused, shed) is given back, so the quota counts accepted jobs.
- Agents and operators are not rate limited. An agent token may hold at most
  `agent_max_long_polls` lease requests open at once on this replica (a wedged agent
  retrying without hanging up cannot pile up waiters); one more is a 429.
- A request body must have arrived in full within `body_timeout_s` of the handler
  starting, or the request ends with 408 `request_timeout` and the connection is
  closed. (A client trickling its request head is cut off by aiohttp's keep-alive
  timer, `client_idle_timeout_s`, which main.py sets.)
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import math
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from aiohttp import web

from badgeline.coordinator.api.auth import Identity
from badgeline.coordinator.api.context import (
    COORDINATOR,
    SESSION_IDENTITY,
    TOKEN_IDENTITY,
    Coordinator,
    coordinator_of,
)
from badgeline.coordinator.api.http import (
    CORRELATION_HEADER,
    Handler,
    correlation_id,
    error_response,
)
from badgeline.coordinator.config import CoordinatorSettings
from badgeline.coordinator.store.access import Taken
from badgeline.log import log_event
from badgeline.protocol.errors import BadgelineError, ErrorCode

SUBMIT_ROUTE = ("POST", "/v1/jobs")
REPRINT_ROUTE = ("POST", "/v1/jobs/{job_id}/reprint")
# A reprint is an accepted job like a submission: both count against the daily quota.
QUOTA_ROUTES = frozenset({SUBMIT_ROUTE, REPRINT_ROUTE})
LEASE_ROUTE = ("POST", "/v1/agents/{printer_id}/lease")
# Every route a kiosk token may call (tests/security checks this against the router).
KIOSK_ROUTES = frozenset({
    SUBMIT_ROUTE,
    REPRINT_ROUTE,
    ("GET", "/v1/jobs"),
    ("GET", "/v1/jobs/{job_id}"),
    ("POST", "/v1/jobs/{job_id}/cancel"),
    ("PUT", "/v1/artifacts/{name}"),
    ("GET", "/v1/artifacts/{name}"),
    ("GET", "/v1/events"),
})  # fmt: skip


@dataclass
class Limits:
    """This replica's share of the limits: open long-polls and who is being refused."""

    long_polls: Counter[tuple[str, str | None]] = field(default_factory=Counter)
    limited: set[str] = field(default_factory=set)
    # Each kiosk token's own daily_quota, by name (the first entry of a name
    # wins): looked up on every submit, where walking every token (one per
    # agent, hundreds at a large venue) cost more than the rest of the check.
    kiosk_quotas: dict[str, int] = field(default_factory=dict)


LIMITS = web.AppKey("limits", Limits)


def route_of(request: web.Request) -> tuple[str, str] | None:
    resource = request.match_info.route.resource
    if resource is None:
        return None
    method = "GET" if request.method == "HEAD" else request.method
    return method, resource.canonical


def caller_of(request: web.Request) -> Identity | None:
    return request.get(SESSION_IDENTITY) or request.get(TOKEN_IDENTITY)


def kiosk_quotas(settings: CoordinatorSettings) -> dict[str, int]:
    quotas: dict[str, int] = {}
    for entry in settings.tokens:
        if entry.role == "kiosk" and entry.daily_quota:
            quotas.setdefault(entry.name, entry.daily_quota)
    return quotas


def quota_of(coordinator: Coordinator, limits: Limits, kiosk_name: str) -> int | None:
    return limits.kiosk_quotas.get(kiosk_name) or coordinator.settings.kiosk_daily_quota


async def take(
    coordinator: Coordinator, limits: Limits, kiosk_name: str, *, counts_quota: bool
) -> Taken:
    settings = coordinator.settings
    quota = quota_of(coordinator, limits, kiosk_name) if counts_quota else None
    taken = await coordinator.store.limits.take_kiosk(
        kiosk_name, rate_per_s=settings.kiosk_rate_per_s or 0, burst=settings.kiosk_burst,
        quota=quota or 0,
    )  # fmt: skip
    return taken if quota else dataclasses.replace(taken, day="")


async def refund(coordinator: Coordinator, kiosk_name: str, day: str) -> None:
    await coordinator.store.limits.refund_kiosk(kiosk_name, day)


def _refused(limits: Limits, identity: Identity, taken: Taken) -> BadgelineError:
    retry_after_s = max(1, math.ceil(taken.retry_after_ms / 1000))
    which = "daily_quota" if taken.limit == "quota" else "rate"
    if identity.actor not in limits.limited:  # one line per episode, not one per request
        limits.limited.add(identity.actor)
        log_event("kiosk_rate_limited", logging.WARNING, actor=identity.actor, limit=which,
                  retry_after_s=retry_after_s)  # fmt: skip
    message = (
        f"this kiosk token has used its daily quota of accepted jobs; retry in {retry_after_s} s"
        if which == "daily_quota"
        else f"this kiosk token is over its request rate; retry in {retry_after_s} s"
    )
    return BadgelineError(
        ErrorCode.RATE_LIMITED, message, extra={"limit": which}, retry_after_s=retry_after_s
    )


async def _kiosk(
    request: web.Request, handler: Handler, identity: Identity, route: tuple[str, str]
) -> web.StreamResponse:
    coordinator = coordinator_of(request)
    settings = coordinator.settings
    limits = request.app[LIMITS]
    counts_quota = (
        route in QUOTA_ROUTES and quota_of(coordinator, limits, identity.name) is not None
    )
    if settings.kiosk_rate_per_s is None and not counts_quota:
        return await handler(request)
    taken = await take(coordinator, limits, identity.name, counts_quota=counts_quota)
    if not taken.admitted:
        raise _refused(limits, identity, taken)
    limits.limited.discard(identity.actor)
    created = False
    try:
        response = await handler(request)
        created = response.status == 201
        return response
    finally:
        if taken.day and not created:
            await refund(coordinator, identity.name, taken.day)


@contextlib.asynccontextmanager
async def _long_poll_slot(request: web.Request, identity: Identity) -> AsyncIterator[None]:
    limits = request.app[LIMITS]
    holder = (identity.name, identity.printer_id)
    most = coordinator_of(request).settings.agent_max_long_polls
    if limits.long_polls[holder] >= most:
        raise BadgelineError(
            ErrorCode.RATE_LIMITED,
            f"this agent token already has {most} lease requests open (agent_max_long_polls)",
            extra={"limit": "long_polls"},
            retry_after_s=1,
        )
    limits.long_polls[holder] += 1
    try:
        yield
    finally:
        limits.long_polls[holder] -= 1
        if limits.long_polls[holder] <= 0:
            del limits.long_polls[holder]


@web.middleware
async def limits_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    route = route_of(request)
    identity = caller_of(request)
    if identity is not None and identity.role == "kiosk" and route in KIOSK_ROUTES:
        return await _kiosk(request, handler, identity, route)
    if identity is not None and identity.role == "agent" and route == LEASE_ROUTE:
        async with _long_poll_slot(request, identity):
            return await handler(request)
    return await handler(request)


@web.middleware
async def body_deadline_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """A body still arriving `body_timeout_s` after its head is a slow-loris: 408."""
    if request.content.is_eof():  # no body, or all of it is already here
        return await handler(request)
    loop = asyncio.get_running_loop()
    timeout_s = coordinator_of(request).settings.body_timeout_s
    watch: asyncio.TimerHandle | None = None
    try:
        async with asyncio.timeout(None) as scope:

            def check() -> None:
                if not request.content.is_eof():
                    scope.reschedule(loop.time())

            watch = loop.call_later(timeout_s, check)
            return await handler(request)
    except TimeoutError:
        if not scope.expired():
            raise
    finally:
        if watch is not None:
            watch.cancel()
    log_event("request_timeout", logging.WARNING, path=request.path, timeout_s=timeout_s)
    response = error_response(BadgelineError(
        ErrorCode.REQUEST_TIMEOUT,
        f"the request body did not arrive within {timeout_s:g} s (body_timeout_s)",
    ))  # fmt: skip
    # Answer now and hang up: lingering to drain a trickle is what the client wants.
    response.force_close()
    response.headers[CORRELATION_HEADER] = correlation_id(request)
    await response.prepare(request)
    await response.write_eof()
    if request.transport is not None:
        request.transport.close()
    return response


def install(app: web.Application) -> None:
    app[LIMITS] = Limits(kiosk_quotas=kiosk_quotas(app[COORDINATOR].settings))
    app.middlewares.append(body_deadline_middleware)
    app.middlewares.append(limits_middleware)
