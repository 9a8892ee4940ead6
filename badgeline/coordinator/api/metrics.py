"""Prometheus metrics at `GET /metrics`, and the request observations that
feed them and the operator reports.

Two kinds of numbers, and the difference matters with several replicas:

- Per process, observed as requests pass through `observe_requests`: accept
  latency, scan-to-print time, dedupe hits, backpressure sheds. Sum them
  over replicas.
- Venue-wide, read from Redis at scrape time: queue depth, jobs by state,
  dead letters, failovers, heartbeat age, printer state and paper. Every
  replica reports the same value; aggregate with max(), not sum().

The Redis tallies behind /v1/stats and /v1/reconcile are not kept here: the
accept, ack, cancel and redrive scripts count the job in the same atomic step
(scripts/includes/tally.lua), which costs no extra round trip and cannot be
skipped by a request that dies halfway.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import choose_encoder

from badgeline.coordinator.api.context import Coordinator, authenticate
from badgeline.coordinator.api.http import Handler
from badgeline.coordinator.api.printers import printer_summary
from badgeline.coordinator.api.reports import Census, take_census
from badgeline.coordinator.control.stalls import GC_PAUSES, LoopLag, StallCollector
from badgeline.coordinator.store.jobs import AckOutcome
from badgeline.log import log_event
from badgeline.protocol.states import JobState

# Scan (acceptance) to print: the floor's budget is about a second; a badge
# that took minutes went through a failover or a retry.
SCAN_TO_PRINT_BUCKETS = (0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 900)
ACCEPT_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


# --------------------------------------------------------------------------- registry


@dataclass(frozen=True)
class VenueSnapshot:
    printers: list[dict[str, Any]]
    census: Census
    dead_letters: int
    failovers: int


class VenueCollector:
    """Yields the venue-wide families from the snapshot the scrape just took."""

    def __init__(self) -> None:
        self.snapshot: VenueSnapshot | None = None

    def collect(self) -> Iterator[Metric]:
        snap = self.snapshot
        if snap is None:
            return
        yield from self._printer_families(snap.printers)
        jobs = GaugeMetricFamily("badgeline_jobs", "Jobs by state", labels=["state"])
        for state, count in sorted(_jobs_by_state(snap.census).items()):
            jobs.add_metric([state], count)
        yield jobs
        yield GaugeMetricFamily("badgeline_dead_letters",
                                "Jobs in the dead-letter list (shed or failed)",
                                value=snap.dead_letters)  # fmt: skip
        yield CounterMetricFamily("badgeline_failovers", "Failover decisions recorded (last 10000)",
                                  value=snap.failovers)  # fmt: skip

    @staticmethod
    def _printer_families(printers: list[dict[str, Any]]) -> Iterator[Metric]:
        depth = GaugeMetricFamily("badgeline_queue_depth", "Jobs waiting", labels=["printer"])
        age = GaugeMetricFamily(
            "badgeline_heartbeat_age_seconds",
            "Seconds since the printer's last heartbeat",
            labels=["printer"],
        )
        state = GaugeMetricFamily(
            "badgeline_printer_state",
            "1 for the printer's health verdict",
            labels=["printer", "state"],
        )
        paper = GaugeMetricFamily(
            "badgeline_printer_paper_low", "1 when paper is low or out", labels=["printer"]
        )
        paused = GaugeMetricFamily("badgeline_printer_paused", "1 when dispatch is paused",
                                   labels=["printer"])  # fmt: skip
        confirmation = GaugeMetricFamily(
            "badgeline_printer_confirmation",
            "1 for how the printer's badges are confirmed printed: process_id (the printer"
            " said so), status (healthy after the bytes), sent (write-only: bytes taken)",
            labels=["printer", "by"],
        )
        for p in printers:
            name = p["printer_id"]
            depth.add_metric([name], p["queue_depth"])
            if p["last_heartbeat_age_s"] is not None:
                age.add_metric([name], p["last_heartbeat_age_s"])
            for verdict in ("healthy", "degraded", "dead"):
                state.add_metric([name, verdict], 1.0 if p["state"] == verdict else 0.0)
            low = (p["health"] or {}).get("paper") in ("low", "out")
            paper.add_metric([name], 1.0 if low else 0.0)
            paused.add_metric([name], 1.0 if p["paused"] else 0.0)
            if p.get("confirmation"):
                confirmation.add_metric([name, p["confirmation"]], 1.0)
        yield from (depth, age, state, paper, paused, confirmation)


def _jobs_by_state(census: Census) -> dict[str, int]:
    counts = {str(state): 0 for state in JobState}
    for job in census.jobs:
        if job.live or job.state == JobState.FAILED:
            counts[job.state] = counts.get(job.state, 0) + 1
    # Printed and canceled jobs are in no index: they are counted as they finish.
    counts[JobState.PRINTED] = census.totals.get("printed", 0)
    counts[JobState.CANCELED] = census.totals.get("canceled", 0)
    return counts


@dataclass
class Metrics:
    """One registry per app: tests (and a process) may build many apps."""

    registry: CollectorRegistry = field(default_factory=CollectorRegistry)
    venue: VenueCollector = field(default_factory=VenueCollector)
    loop_lag: LoopLag = field(default_factory=LoopLag)  # started with the app (app.py)

    def __post_init__(self) -> None:
        r = self.registry
        self.accept_latency = Histogram(
            "badgeline_accept_latency_seconds", "POST /v1/jobs handling time, by outcome",
            ["outcome"], registry=r, buckets=ACCEPT_BUCKETS,
        )  # fmt: skip
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
        r.register(self.venue)
        GC_PAUSES.install()
        r.register(StallCollector(self.loop_lag))


METRICS = web.AppKey("metrics", Metrics)


async def venue_snapshot(coordinator: Coordinator) -> VenueSnapshot:
    store = coordinator.store
    seconds, micros = await store.redis.time()
    now_ms = int(seconds) * 1000 + int(micros) // 1000
    known = sorted(_text(p) for p in await store.redis.smembers(store.keys.printers))
    printers = [await printer_summary(coordinator, p, now_ms) for p in known]
    return VenueSnapshot(
        printers=printers,
        census=await take_census(coordinator),
        dead_letters=int(await store.redis.zcard(store.keys.dead_letters)),
        failovers=int(await store.redis.llen(store.keys.failovers)),
    )


async def scrape(request: web.Request) -> web.Response:
    coordinator, _ = authenticate(request, "operator")
    metrics = request.app[METRICS]
    snapshot = await venue_snapshot(coordinator)
    # No await between setting the snapshot and rendering: a concurrent scrape
    # cannot swap it underneath.
    metrics.venue.snapshot = snapshot
    # The format the scraper asks for (OpenMetrics or the classic text format).
    encode, content_type = choose_encoder(request.headers.get("Accept", ""))
    return web.Response(body=encode(metrics.registry), headers={"Content-Type": content_type})


def install(app: web.Application) -> None:
    app[METRICS] = Metrics()
    app.router.add_get("/metrics", scrape)


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
