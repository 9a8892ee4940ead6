"""Prometheus metrics at `GET /metrics`.

Two kinds of numbers, and the difference matters with several replicas:

- Per process, observed as requests pass through (api/observations.py): accept
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

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import choose_encoder

from badgeline.coordinator.api.context import Coordinator, authenticate
from badgeline.coordinator.api.observations import METRICS, Metrics
from badgeline.coordinator.control.census import take_census
from badgeline.coordinator.control.fleet import fleet_summary
from badgeline.coordinator.store.reports import Census
from badgeline.protocol.states import JobState

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
    # Failed jobs that have left Redis after their retention are counted as they go.
    counts[JobState.FAILED] += census.totals.get("retired_failed", 0)
    return counts


async def venue_snapshot(coordinator: Coordinator) -> VenueSnapshot:
    store = coordinator.store
    return VenueSnapshot(
        printers=await fleet_summary(store, coordinator.agent_browser),
        census=await take_census(store, coordinator.failover),
        dead_letters=await store.jobs.dead_letter_count(),
        failovers=await store.failovers.decision_count(),
    )


async def scrape(request: web.Request) -> web.Response:
    coordinator, _ = authenticate(request, "operator")
    metrics, venue = request.app[METRICS], request.app[VENUE]
    snapshot = await venue_snapshot(coordinator)
    # No await between setting the snapshot and rendering: a concurrent scrape
    # cannot swap it underneath.
    venue.snapshot = snapshot
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
