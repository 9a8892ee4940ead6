"""The per-process metrics: accept latency, scan-to-print time, dedupe hits and
backpressure sheds, observed as requests pass through `observe_requests` (and
the ack handler's `observe_printed`); GC pauses and event-loop lag; the
process's own CPU, memory, file descriptors and start time (prometheus_client's
process collector), its build, and whether its last scrape reached Redis.
With several replicas, sum them over replicas (api/metrics.py serves them).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    Info,
    ProcessCollector,
    disable_created_metrics,
)

from badgeline import __version__
from badgeline.coordinator.api.http import Handler
from badgeline.coordinator.control.stalls import GC_PAUSES, LoopLag, StallCollector
from badgeline.coordinator.store.leases import AckOutcome
from badgeline.log import log_event

# Scan (acceptance) to print: the floor's budget is about a second; a badge
# that took minutes went through a failover or a retry.
SCAN_TO_PRINT_BUCKETS = (0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 900)
ACCEPT_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5)
ACCEPT_OUTCOMES = ("accepted", "duplicate", "shed", "refused")

# No `_created` gauge beside each counter and histogram in the text format: a
# series per family that no dashboard or alert reads (process_start_time_seconds
# says when the counters started).
disable_created_metrics()


@dataclass
class Metrics:
    """One registry per app: tests (and a process) may build many apps."""

    registry: CollectorRegistry = field(default_factory=CollectorRegistry)
    loop_lag: LoopLag = field(default_factory=LoopLag)  # started with the app (app.py)

    def __post_init__(self) -> None:
        r = self.registry
        self.accept_latency = Histogram(
            "badgeline_accept_latency_seconds", "POST /v1/jobs handling time, by outcome",
            ["outcome"], registry=r, buckets=ACCEPT_BUCKETS,
        )  # fmt: skip
        # Every outcome's series exists from the start at zero, so a rate() over the
        # first submissions after a restart sees them rise (a series born at its first
        # observation has no earlier sample, and its rate reads as nothing).
        for outcome in ACCEPT_OUTCOMES:
            self.accept_latency.labels(outcome)
        self.scan_to_print = Histogram(
            "badgeline_scan_to_print_seconds", "Acceptance to the first printed ack",
            registry=r, buckets=SCAN_TO_PRINT_BUCKETS,
        )  # fmt: skip
        self.dedupe_hits = Counter(
            "badgeline_dedupe_hits", "Submissions answered as duplicates", registry=r
        )
        self.sheds = Counter(
            "badgeline_backpressure_sheds", "Submissions shed by backpressure", registry=r
        )
        self.store_up = Gauge(
            "badgeline_store_up", "1 when this replica's last scrape read the venue from"
            " Redis, 0 when Redis was unreachable", registry=r,
        )  # fmt: skip
        Info("badgeline_build", "The coordinator's release", registry=r).info(
            {"version": __version__}
        )
        ProcessCollector(registry=r)
        GC_PAUSES.install()
        r.register(StallCollector(self.loop_lag))


METRICS = web.AppKey("metrics", Metrics)


# --------------------------------------------------------------------------- observations

# (request, its response, the app's metrics, seconds the handler took)
Observer = Callable[[web.Request, web.Response, Metrics, float], Awaitable[None]]


def _body(response: web.Response) -> Any:
    try:
        return json.loads(response.text or "null")
    except (ValueError, TypeError):
        return None


def _accept_outcome(response: web.Response, body: Any) -> str:
    if response.status == 201:
        return "accepted"
    if response.status == 200:
        return "duplicate"
    code = body.get("error", {}).get("code") if isinstance(body, dict) else None
    return "shed" if code == "queue_full" else "refused"


async def _observe_accept(
    request: web.Request, response: web.Response, metrics: Metrics, elapsed_s: float
) -> None:
    outcome = _accept_outcome(response, _body(response) if response.status >= 400 else None)
    metrics.accept_latency.labels(outcome).observe(elapsed_s)
    if outcome == "duplicate":
        metrics.dedupe_hits.inc()
    elif outcome == "shed":
        metrics.sheds.inc()


def observe_printed(app: web.Application, outcome: AckOutcome) -> None:
    """Called by the ack handler: the ack script says whether this was the first print."""
    metrics = app.get(METRICS)
    if metrics is not None and outcome.scan_to_print_s is not None:
        metrics.scan_to_print.observe(outcome.scan_to_print_s)


OBSERVERS: dict[str, Observer] = {
    "/v1/jobs": _observe_accept,
}


@web.middleware
async def observe_requests(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Sits outside the error middleware, so it sees every answer as a response."""
    resource = request.match_info.route.resource
    observer = OBSERVERS.get(resource.canonical) if resource is not None else None
    metrics = request.app.get(METRICS)
    if observer is None or metrics is None or request.method != "POST":
        return await handler(request)
    started = time.perf_counter()
    response = await handler(request)
    elapsed_s = time.perf_counter() - started
    if not isinstance(response, web.Response):
        return response
    try:
        await observer(request, response, metrics, elapsed_s)
    except Exception as error:  # the request did what it was asked; never fail it here
        log_event("report_tally_failed", logging.ERROR, path=request.path, error=repr(error))
    return response
