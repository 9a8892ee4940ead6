"""GET /metrics: the Prometheus text format parses and carries every family
the operator dashboards use, with values that match what happened: venue-wide
counters per printer, gauges of what is open now, the active alerts, the
process and its build; and Redis away is a scrape that says so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aiohttp import ClientSession
from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as openmetrics_families,
)
from prometheus_client.parser import text_string_to_metric_families
from redis.asyncio import Redis

from badgeline import __version__
from badgeline.coordinator.api.observations import ACCEPT_OUTCOMES
from badgeline.coordinator.app import create_app
from badgeline.coordinator.config import CoordinatorSettings
from badgeline.coordinator.store.embedded import EmbeddedRedis
from tests.conftest import KIOSK_TOKEN, METRICS_TOKEN, OPERATOR_TOKEN, auth
from tests.ops.conftest import MakeVenue
from tests.ops.venue import Venue, serve

FAMILIES = {
    "badgeline_queue_depth", "badgeline_jobs", "badgeline_accept_latency_seconds",
    "badgeline_scan_to_print_seconds", "badgeline_failovers", "badgeline_dedupe_hits",
    "badgeline_backpressure_sheds", "badgeline_dead_letters", "badgeline_heartbeat_age_seconds",
    "badgeline_printer_state", "badgeline_printer_paper_low", "badgeline_printer_paused",
    "badgeline_gc_pause_seconds", "badgeline_event_loop_lag_seconds",
    "badgeline_jobs_printed", "badgeline_print_failures", "badgeline_print_uncertain",
    "badgeline_possible_duplicates", "badgeline_duplicate_prints", "badgeline_jobs_shed",
    "badgeline_jobs_accepted", "badgeline_jobs_canceled", "badgeline_jobs_expired",
    "badgeline_reprints",
    "badgeline_printers", "badgeline_queue_flag", "badgeline_leased_jobs",
    "badgeline_printing_jobs", "badgeline_queue_high_water_mark", "badgeline_alert",
    "badgeline_oldest_open_job_age_seconds", "badgeline_jobs_printed_more_than_once",
    "badgeline_build_info", "badgeline_store_up", "process_cpu_seconds",
    "process_resident_memory_bytes", "process_open_fds", "process_start_time_seconds",
}  # fmt: skip


async def scrape_text(session: ClientSession, url: str, token: str = METRICS_TOKEN) -> str:
    async with session.get(url + "/metrics", headers=auth(token)) as response:
        assert response.status == 200, await response.text()
        assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        return await response.text()


async def scrape(venue: Venue, token: str = METRICS_TOKEN) -> dict[str, Any]:
    text = await scrape_text(venue.session, venue.url, token)
    return {family.name: family for family in text_string_to_metric_families(text)}


def sample(families: dict[str, Any], metric: str, /, **labels: str) -> float:
    for family in families.values():
        for s in family.samples:
            if s.name == metric and all(s.labels.get(k) == v for k, v in labels.items()):
                return float(s.value)
    raise AssertionError(f"no sample {metric} {labels}")


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

    # WHEN Prometheus scrapes, with its scrape-only token
    families = await scrape(venue)

    # THEN every family is there, in the text format
    assert set(families) >= FAMILIES
    # AND the gauges are what is open now
    assert sample(families, "badgeline_queue_depth", printer="printer-a") == 2
    assert sample(families, "badgeline_leased_jobs", printer="printer-a") == 1
    assert sample(families, "badgeline_leased_jobs", printer="printer-b") == 0
    assert sample(families, "badgeline_jobs", state="queued") == 2
    assert sample(families, "badgeline_jobs", state="leased") == 1
    assert sample(families, "badgeline_jobs", state="dead_lettered") == 1
    assert not [s for s in families["badgeline_jobs"].samples
                if s.labels["state"] in ("printed", "canceled")]  # fmt: skip
    assert sample(families, "badgeline_dead_letters") == 1
    assert sample(families, "badgeline_queue_high_water_mark") == 3
    assert sample(families, "badgeline_printers", state="degraded") == 1
    assert sample(families, "badgeline_printers", state="healthy") == 1
    assert sample(families, "badgeline_printers", state="dead") == 0
    assert sample(families, "badgeline_printer_paper_low", printer="printer-a") == 1
    assert sample(families, "badgeline_printer_state", printer="printer-a", state="degraded") == 1
    assert sample(families, "badgeline_printer_paused", printer="printer-b") == 1
    assert 0 <= sample(families, "badgeline_heartbeat_age_seconds", printer="printer-a") < 60
    assert sample(families, "badgeline_oldest_open_job_age_seconds", state="queued") >= 0
    # AND the venue's counters are counters, per printer, 0 where nothing happened
    assert families["badgeline_jobs_printed"].type == "counter"
    assert sample(families, "badgeline_jobs_printed_total", printer="printer-b") == 1
    assert sample(families, "badgeline_jobs_printed_total", printer="printer-a") == 0
    assert sample(families, "badgeline_jobs_shed_total", printer="printer-a") == 1
    assert sample(families, "badgeline_failovers_total", printer="printer-b") == 1
    assert sample(families, "badgeline_failovers_total", printer="printer-a") == 0
    assert sample(families, "badgeline_jobs_accepted_total") == 4  # the shed one was not
    assert sample(families, "badgeline_print_uncertain_total", printer="printer-a") == 0
    # AND the active alerts of /v1/alerts are there, one sample each
    assert sample(families, "badgeline_alert", name="paper_low", printer="printer-a",
                  severity="warning") == 1  # fmt: skip
    assert sample(families, "badgeline_alert", name="dead_letters", printer="",
                  severity="warning") == 1  # fmt: skip
    # AND this process's own numbers, which sum over replicas
    assert sample(families, "badgeline_accept_latency_seconds_count", outcome="accepted") == 4
    assert sample(families, "badgeline_accept_latency_seconds_count", outcome="duplicate") == 1
    assert sample(families, "badgeline_accept_latency_seconds_count", outcome="shed") == 1
    assert sample(families, "badgeline_scan_to_print_seconds_count") == 1
    assert sample(families, "badgeline_dedupe_hits_total") == 1
    assert sample(families, "badgeline_backpressure_sheds_total") == 1
    assert sample(families, "badgeline_build_info", version=__version__) == 1
    assert sample(families, "badgeline_store_up") == 1
    assert sample(families, "process_resident_memory_bytes") > 0
    assert sample(families, "process_open_fds") > 0


async def test_uncertain_prints_duplicates_and_failovers_are_counted_on_their_printer(
    make_venue: MakeVenue,
) -> None:
    venue = await make_venue()
    a, b = venue.agent("printer-a"), venue.agent("printer-b")
    await a.heartbeat()
    await b.heartbeat()
    # GIVEN a badge printer-a cannot vouch for (acked uncertain), sent again
    (job_id,) = await venue.submit("printer-a")
    (first,) = await a.lease()
    await a.start(first)
    await a.ack(first, "uncertain", "power cut mid-badge")
    # WHEN it prints on the reprint, and the first attempt's print turns up late
    (second,) = await a.lease()
    await a.start(second)
    await a.ack(second)
    await a.ack(first)
    # AND a failed attempt, and a drain of printer-b
    (failing,) = await venue.submit("printer-a")
    (leased,) = await a.lease()
    assert leased["job_id"] == failing
    await a.start(leased)
    await a.ack(leased, "failed", "jammed")
    await venue.cli_ok("drain", "printer-b", "--to", "printer-a")
    families = await scrape(venue)

    # THEN each counts once, against the printer it happened on
    assert sample(families, "badgeline_print_uncertain_total", printer="printer-a") == 1
    assert sample(families, "badgeline_possible_duplicates_total", printer="printer-a") == 1
    assert sample(families, "badgeline_jobs_printed_total", printer="printer-a") == 1
    assert sample(families, "badgeline_duplicate_prints_total", printer="printer-a") == 1
    assert sample(families, "badgeline_jobs_printed_more_than_once") == 1
    assert sample(families, "badgeline_print_failures_total", printer="printer-a") == 1
    assert sample(families, "badgeline_failovers_total", printer="printer-b") == 1
    for counter in ("print_uncertain", "possible_duplicates", "duplicate_prints"):
        assert sample(families, f"badgeline_{counter}_total", printer="printer-b") == 0
    # AND the printed-twice alert of /v1/alerts is a metric too
    assert sample(families, "badgeline_alert", name="duplicate_prints",
                  severity="critical") == 1  # fmt: skip
    # AND a second scrape (any replica: the numbers are Redis's) reads the same counts
    again = await scrape(venue, OPERATOR_TOKEN)
    assert sample(again, "badgeline_print_uncertain_total", printer="printer-a") == 1
    assert (await venue.job(job_id))["state"] == "printed"


async def test_each_app_has_its_own_registry_and_metrics_need_a_metrics_or_operator_token(
    make_venue: MakeVenue,
) -> None:
    # GIVEN two coordinators in one process (as tests and replicas-in-a-test do)
    first, second = await make_venue(), await make_venue()
    await first.submit("printer-a", 2)
    # WHEN both are scraped, one with the metrics token and one with an operator's
    one, two = await scrape(first), await scrape(second, OPERATOR_TOKEN)
    # THEN each counts only its own requests (same venue, separate processes' counters)
    assert sample(one, "badgeline_accept_latency_seconds_count", outcome="accepted") == 2
    assert {s.labels["outcome"]: s.value for s in two["badgeline_accept_latency_seconds"].samples
            if s.name.endswith("_count")} == dict.fromkeys(ACCEPT_OUTCOMES, 0)  # fmt: skip
    # AND both read the venue's counters from Redis alike
    assert sample(one, "badgeline_jobs_accepted_total") == 2
    assert sample(two, "badgeline_jobs_accepted_total") == 2
    # AND a scraper that asks for OpenMetrics gets it, and it parses
    headers = {**auth(METRICS_TOKEN), "Accept": "application/openmetrics-text; version=1.0.0"}
    async with first.session.get(first.url + "/metrics", headers=headers) as response:
        assert response.headers["Content-Type"].startswith("application/openmetrics-text")
        text = await response.text()
    names = {family.name for family in openmetrics_families(text)}
    assert names >= {"badgeline_jobs", "badgeline_dedupe_hits", "badgeline_failovers"}
    # AND without a token, or with a kiosk's, there is nothing to read
    async with first.session.get(first.url + "/metrics") as response:
        assert response.status == 401
    async with first.session.get(first.url + "/metrics", headers=auth(KIOSK_TOKEN)) as response:
        assert response.status == 403


async def test_with_redis_away_the_scrape_answers_and_says_so(
    settings: CoordinatorSettings, tmp_path: Path
) -> None:
    # GIVEN a coordinator on a Redis server of its own, scraped once
    server = EmbeddedRedis(tmp_path / "redis", appendfsync="everysec")
    server.start()
    redis = Redis.from_url(server.url, socket_connect_timeout=1)
    runner, url = await serve(create_app(settings, redis))
    try:
        async with ClientSession() as session:
            up = text_string_to_metric_families(await scrape_text(session, url))
            assert {"badgeline_queue_depth", "badgeline_store_up"} <= {f.name for f in up}
            # WHEN the server goes away
            server.stop()
            text = await scrape_text(session, url)
        # THEN the scrape still answers: this process's numbers, and Redis unreachable
        families = {family.name: family for family in text_string_to_metric_families(text)}
        assert sample(families, "badgeline_store_up") == 0
        assert sample(families, "process_resident_memory_bytes") > 0
        # AND no venue-wide number pretends to be current
        assert "badgeline_queue_depth" not in families
        assert "badgeline_jobs_printed" not in families
    finally:
        await runner.cleanup()
        await redis.aclose()
        server.stop()
