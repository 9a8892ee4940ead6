"""GET /metrics: the Prometheus text format parses and carries every family
the operator dashboards use, with values that match what happened."""

from __future__ import annotations

from typing import Any

from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as openmetrics_families,
)
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import OPERATOR_TOKEN, auth
from tests.ops.conftest import MakeVenue
from tests.ops.venue import Venue

FAMILIES = {
    "badgeline_queue_depth", "badgeline_jobs", "badgeline_accept_latency_seconds",
    "badgeline_scan_to_print_seconds", "badgeline_failovers", "badgeline_dedupe_hits",
    "badgeline_backpressure_sheds", "badgeline_dead_letters", "badgeline_heartbeat_age_seconds",
    "badgeline_printer_state", "badgeline_printer_paper_low", "badgeline_printer_paused",
    "badgeline_gc_pause_seconds", "badgeline_event_loop_lag_seconds",
}  # fmt: skip


async def scrape(venue: Venue) -> dict[str, Any]:
    async with venue.session.get(venue.url + "/metrics", headers=auth(OPERATOR_TOKEN)) as response:
        assert response.status == 200, await response.text()
        assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = await response.text()
    return {family.name: family for family in text_string_to_metric_families(text)}


def sample(families: dict[str, Any], name: str, **labels: str) -> float:
    for family in families.values():
        for s in family.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                return float(s.value)
    raise AssertionError(f"no sample {name} {labels}")


async def test_the_scrape_parses_and_matches_the_venue(make_venue: MakeVenue) -> None:
    venue = await make_venue(high_water_mark=3, spill_named_targets=False)
    # GIVEN a printed badge, a duplicate submission, a shed job, two waiting
    # jobs on a paper-low printer and a drained printer
    a, b = venue.agent("printer-a"), venue.agent("printer-b")
    await a.heartbeat(paper="low")
    await b.heartbeat()
    key, attendee = "scan-metrics-01", "att_metrics"
    (printed,) = await venue.submit("printer-b", idempotency_key=key, attendee_id=attendee)
    await venue.submit("printer-b", status=200, idempotency_key=key, attendee_id=attendee)
    assert await b.print_next() == printed
    await venue.submit("printer-a", 3)
    await venue.submit("printer-a", status=503)
    await venue.cli_ok("drain", "printer-b", "--to", "printer-a")
    (lease,) = await a.lease()
    assert lease

    # WHEN Prometheus scrapes
    families = await scrape(venue)

    # THEN every family is there, in the text format
    assert set(families) >= FAMILIES
    # AND the values are the venue's
    assert sample(families, "badgeline_queue_depth", printer="printer-a") == 2
    assert sample(families, "badgeline_jobs", state="queued") == 2
    assert sample(families, "badgeline_jobs", state="leased") == 1
    assert sample(families, "badgeline_jobs", state="printed") == 1
    assert sample(families, "badgeline_jobs", state="dead_lettered") == 1
    assert sample(families, "badgeline_dead_letters") == 1
    assert sample(families, "badgeline_accept_latency_seconds_count", outcome="accepted") == 4
    assert sample(families, "badgeline_accept_latency_seconds_count", outcome="duplicate") == 1
    assert sample(families, "badgeline_accept_latency_seconds_count", outcome="shed") == 1
    assert sample(families, "badgeline_scan_to_print_seconds_count") == 1
    assert sample(families, "badgeline_dedupe_hits_total") == 1
    assert sample(families, "badgeline_backpressure_sheds_total") == 1
    assert sample(families, "badgeline_failovers_total") == 1
    assert sample(families, "badgeline_printer_paper_low", printer="printer-a") == 1
    assert sample(families, "badgeline_printer_state", printer="printer-a", state="degraded") == 1
    assert sample(families, "badgeline_printer_paused", printer="printer-b") == 1
    assert 0 <= sample(families, "badgeline_heartbeat_age_seconds", printer="printer-a") < 60


async def test_each_app_has_its_own_registry_and_metrics_need_an_operator(
    make_venue: MakeVenue,
) -> None:
    # GIVEN two coordinators in one process (as tests and replicas-in-a-test do)
    first, second = await make_venue(), await make_venue()
    await first.submit("printer-a", 2)
    # WHEN both are scraped
    one, two = await scrape(first), await scrape(second)
    # THEN each counts only its own requests (same venue, separate processes' counters)
    assert sample(one, "badgeline_accept_latency_seconds_count", outcome="accepted") == 2
    assert not [s for s in two["badgeline_accept_latency_seconds"].samples
                if s.name.endswith("_count")]  # fmt: skip
    # AND a scraper that asks for OpenMetrics gets it, and it parses
    headers = {**auth(OPERATOR_TOKEN), "Accept": "application/openmetrics-text; version=1.0.0"}
    async with first.session.get(first.url + "/metrics", headers=headers) as response:
        assert response.headers["Content-Type"].startswith("application/openmetrics-text")
        text = await response.text()
    names = {family.name for family in openmetrics_families(text)}
    assert names >= {"badgeline_jobs", "badgeline_dedupe_hits", "badgeline_failovers"}
    # AND without an operator token there is nothing to read
    async with first.session.get(first.url + "/metrics") as response:
        assert response.status == 401
