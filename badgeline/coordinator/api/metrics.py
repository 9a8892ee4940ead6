"""Prometheus metrics at `GET /metrics`, for an operator or a scrape-only `metrics` token.

Two kinds of numbers, and the difference matters with several replicas:

- Per process (api/observations.py): accept latency, scan-to-print time,
  dedupe hits, backpressure sheds, GC pauses, event-loop lag, the process's
  CPU, memory and file descriptors, its build. Sum them over replicas.
- Venue-wide, read from Redis at scrape time (api/venue_metrics.py): queues,
  printers, open jobs, alerts, and the venue's counters of printed, failed,
  uncertain, shed and duplicated jobs and failovers. Every replica reports
  the same value; aggregate with max(), not sum().

With Redis away the scrape still answers: the per-process families and
`badgeline_store_up 0`, so an alert can tell a coordinator that is down from
one that cannot reach Redis.
"""

from __future__ import annotations

import logging

from aiohttp import web
from prometheus_client.exposition import choose_encoder

from badgeline.coordinator.api.context import authenticate
from badgeline.coordinator.api.observations import METRICS, Metrics
from badgeline.coordinator.api.venue_metrics import VenueCollector
from badgeline.coordinator.control.monitoring import VenueReading, read_venue
from badgeline.coordinator.store import STORE_UNAVAILABLE
from badgeline.log import log_event


async def scrape(request: web.Request) -> web.Response:
    coordinator, _ = authenticate(request, "operator", "metrics")
    metrics, venue = request.app[METRICS], request.app[VENUE]
    reading: VenueReading | None = None
    try:
        reading = await read_venue(coordinator.store, coordinator.agent_browser,
                                   coordinator.failover)  # fmt: skip
    except STORE_UNAVAILABLE as error:
        log_event("metrics_store_unavailable", logging.WARNING, error=str(error))
    metrics.store_up.set(0 if reading is None else 1)
    # No await between setting the reading and rendering: a concurrent scrape
    # cannot swap it underneath.
    venue.reading = reading
    # The format the scraper asks for (OpenMetrics or the classic text format).
    encode, content_type = choose_encoder(request.headers.get("Accept", ""))
    return web.Response(body=encode(metrics.registry), headers={"Content-Type": content_type})


VENUE = web.AppKey("venue_metrics", VenueCollector)


def install(app: web.Application) -> None:
    """One registry per app: tests (and a process) may build many apps."""
    app[METRICS] = Metrics()
    app[VENUE] = VenueCollector()
    app[METRICS].registry.register(app[VENUE])
    app.router.add_get("/metrics", scrape)
