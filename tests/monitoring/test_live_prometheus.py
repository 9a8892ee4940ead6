"""The monitoring pack against a real Prometheus scraping a real venue.

One venue of real processes (a coordinator with its embedded Redis, two printer
emulators and their agents, as the e2e tests start them) and Debian's
`prometheus` run as a plain process on loopback, with the sample config's jobs
pointed at them, scraping every second and loading the alert rules. Once
Prometheus has scraped everything, the venue prints a few badges, takes a
duplicate submission, and leaves one badge queued behind a paused printer that
is low on paper. Then: every Grafana panel's query returns data, every rule
evaluates without error and the paper alert fires, every metric the pack names
is exported and documented, and promtool lints both expositions.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from badgeline.coordinator.store.embedded import free_port
from badgeline.localvenue import ManagedProcess, http_ok, wait_until
from badgeline.samples import sample_badge_pdf
from tests.e2e.venue import E2EVenue
from tests.monitoring.pack import (
    RULES,
    SAMPLE_CONFIG,
    dashboard_queries,
    metric_names,
    rules,
)

pytestmark = pytest.mark.timeout(300)

REPO = Path(__file__).resolve().parents[2]
PRINTERS = ("printer-a", "printer-b")
# Waits on conditions, bounded generously: the machine may be loaded.
SCRAPED_WITHIN_S = 60
ANSWERED_WITHIN_S = 90


@dataclass
class Watched:
    """The venue and the Prometheus that scrapes it."""

    venue: E2EVenue
    prometheus_url: str
    agent_urls: dict[str, str]
    ref: str  # the badge the venue printed

    def query(self, expr: str) -> list[dict[str, Any]]:
        url = f"{self.prometheus_url}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        with urllib.request.urlopen(url, timeout=10) as response:
            answer = json.load(response)
        assert answer["status"] == "success", answer
        result: list[dict[str, Any]] = answer["data"]["result"]
        return result

    def api(self, path: str) -> Any:
        with urllib.request.urlopen(self.prometheus_url + path, timeout=10) as response:
            return json.load(response)["data"]


def _has_data(result: list[dict[str, Any]]) -> bool:
    """At least one sample with a number (histogram_quantile of no rate is NaN)."""
    return any(row["value"][1] not in ("NaN", "+Inf", "-Inf") for row in result)


def _status_url(venue: E2EVenue, printer_id: str) -> str | None:
    """Where the agent's status endpoint listens: it picks a free port and logs it."""
    log = venue.root / "logs" / f"agent-{printer_id}.log"
    for line in log.read_text(errors="replace").splitlines():
        if '"status_serving"' in line:
            return str(json.loads(line[line.index("{") :])["url"])
    return None


def _alive(prometheus: ManagedProcess) -> bool:
    if not prometheus.running:
        tail = prometheus.log_path.read_text(errors="replace")[-2000:]
        raise RuntimeError(f"prometheus exited; its log ends:\n{tail}")
    return True


def _prometheus_config(venue: E2EVenue, agent_urls: dict[str, str], folder: Path) -> Path:
    """The sample config, its jobs pointed at this venue: scraped every second."""
    config = yaml.safe_load(SAMPLE_CONFIG.read_text(encoding="utf-8"))
    token_file = folder / "metrics-token"
    token_file.write_text(venue.metrics_token)
    config["global"] = {"scrape_interval": "1s", "scrape_timeout": "1s",
                        "evaluation_interval": "1s"}  # fmt: skip
    config["rule_files"] = [str(RULES)]
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    jobs["badgeline-coordinator"]["authorization"]["credentials_file"] = str(token_file)
    jobs["badgeline-coordinator"]["static_configs"] = [
        {"targets": [venue.url.removeprefix("http://")]}
    ]
    jobs["badgeline-agent"]["static_configs"] = [
        {"targets": [url.removeprefix("http://") for url in agent_urls.values()]}
    ]
    path = folder / "prometheus.yml"
    path.write_text(json.dumps(config))  # JSON is YAML
    return path


def _make_some_history(venue: E2EVenue) -> str:
    """Badges printed while Prometheus watches, a duplicate, a badge left waiting."""
    ref = venue.upload_badge(sample_badge_pdf("A-MON-0001", "Mona Itor", "Scrape Ltd"))
    printed = [venue.submit("printer-a", f"att_mon_{n}", ref, idempotency_key=f"scan-mon-{n}")
               for n in range(3)]  # fmt: skip
    venue.submit("printer-a", "att_mon_0", ref, idempotency_key="scan-mon-0")  # a duplicate
    wait_until(lambda: all(venue.job(j["job_id"])["state"] == "printed" for j in printed),
               ANSWERED_WITHIN_S, "the badges to print")  # fmt: skip
    # printer-b runs low on paper (degraded, an alert) and is paused: its badge waits
    venue.set_fault("printer-b", "paper_low")
    venue.api("POST", "/v1/printers/printer-b/pause", {})
    venue.submit("printer-b", "att_mon_waiting", ref)
    return ref


@pytest.fixture(scope="module")
def watched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Watched]:
    folder = tmp_path_factory.mktemp("monitoring")
    venue = E2EVenue(folder / "venue", printer_ids=PRINTERS)
    prometheus = ManagedProcess("prometheus", [], folder / "prometheus.log")
    try:
        venue.start()
        wait_until(lambda: all(_status_url(venue, p) for p in PRINTERS), SCRAPED_WITHIN_S,
                   "every agent to serve its status endpoint")  # fmt: skip
        agent_urls = {p: str(_status_url(venue, p)) for p in PRINTERS}
        port = free_port()
        prometheus.command = [
            "prometheus", f"--config.file={_prometheus_config(venue, agent_urls, folder)}",
            f"--storage.tsdb.path={folder / 'tsdb'}", f"--web.listen-address=127.0.0.1:{port}",
        ]  # fmt: skip
        prometheus.start()
        url = f"http://127.0.0.1:{port}"
        wait_until(lambda: _alive(prometheus) and http_ok(url + "/-/ready"),
                   SCRAPED_WITHIN_S, "Prometheus to be ready")  # fmt: skip
        world = Watched(venue, url, agent_urls, ref="")
        wait_until(
            lambda: len(world.query("up == 1")) == 1 + len(PRINTERS),
            SCRAPED_WITHIN_S,
            "Prometheus to scrape the coordinator and the agents",
        )
        world.ref = _make_some_history(venue)
        yield world
    finally:
        prometheus.stop()
        venue.stop()


def test_every_dashboard_query_returns_data(watched: Watched) -> None:
    queries = dashboard_queries()
    assert len(queries) > 20
    # WHEN Grafana would ask each panel's query
    missing = dict(queries)
    last_scan = [0.0]

    def all_answered() -> bool:
        # a kiosk keeps scanning (a repeat of a printed badge, so nothing more prints):
        # the latency panels' rate() windows always hold fresh submissions, however
        # long the loaded machine took to get here
        if time.monotonic() - last_scan[0] > 2:
            venue, ref = watched.venue, watched.ref
            venue.submit("printer-a", "att_mon_0", ref, idempotency_key="scan-mon-0")
            last_scan[0] = time.monotonic()
        for title, expr in list(missing.items()):
            if _has_data(watched.query(expr)):
                del missing[title]
        return not missing

    # THEN each returns data (a number, not NaN) once the venue has done something
    try:
        wait_until(all_answered, ANSWERED_WITHIN_S, "every dashboard query to return data")
    except TimeoutError:
        pytest.fail(f"queries with no data: {json.dumps(missing, indent=1)}")


def test_the_rules_evaluate_on_real_series_and_the_paper_alert_fires(watched: Watched) -> None:
    names = {rule["alert"] for rule in rules()}

    def evaluated() -> list[dict[str, Any]]:
        groups = watched.api("/api/v1/rules")["groups"]
        loaded = [rule for group in groups for rule in group["rules"]]
        done = [rule for rule in loaded if rule["health"] != "unknown"]
        return done if len(done) == len(names) else []

    # GIVEN Prometheus has evaluated every rule at least once
    wait_until(evaluated, ANSWERED_WITHIN_S, "every rule to be evaluated")
    loaded = evaluated()
    # THEN each is the pack's, and none failed on the venue's real series
    assert {rule["name"] for rule in loaded} == names
    assert [(r["name"], r["lastError"]) for r in loaded if r["health"] != "ok"] == []
    # AND the paper that ran low is an alert, on its printer, and only that one
    firing = 'ALERTS{alertname="BadgelinePaperLow", alertstate="firing"}'
    wait_until(lambda: watched.query(firing), ANSWERED_WITHIN_S, "BadgelinePaperLow to fire")
    assert [row["metric"]["printer"] for row in watched.query(firing)] == ["printer-b"]
    # AND nothing critical fires on a venue that works
    critical = watched.query('ALERTS{alertstate="firing", severity="critical"}')
    assert critical == [], critical


def test_every_metric_the_pack_names_is_exported_and_documented(watched: Watched) -> None:
    # GIVEN every series name the rules and the dashboard select
    named = set().union(*(metric_names(expr) for _, expr in dashboard_queries()))
    named |= set().union(*(metric_names(rule["expr"]) for rule in rules()))

    def not_exported() -> set[str]:
        return named - set(watched.api("/api/v1/label/__name__/values"))

    # THEN the venue exports each, once Prometheus has scraped what the venue did (a
    # typo would leave a panel or an alert silent for ever)
    try:
        wait_until(lambda: not not_exported(), ANSWERED_WITHIN_S, "every named series")
    except TimeoutError:
        pytest.fail(f"series named but never exported: {sorted(not_exported())}")
    exported = set(watched.api("/api/v1/label/__name__/values"))
    # AND docs/monitoring.md describes every badgeline family the venue exports
    docs = (REPO / "docs" / "monitoring.md").read_text(encoding="utf-8")
    families = {re.sub(r"_(bucket|sum|count)$", "", name) for name in exported
                if name.startswith("badgeline_")}  # fmt: skip
    undocumented = sorted(f for f in families if f"`{f}" not in docs)
    assert undocumented == []


def test_promtool_lints_both_expositions(watched: Watched) -> None:
    venue = watched.venue
    request = urllib.request.Request(
        venue.url + "/metrics", headers={"Authorization": f"Bearer {venue.metrics_token}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        coordinator = response.read()
    with urllib.request.urlopen(watched.agent_urls["printer-a"] + "/metrics", timeout=10) as r:
        agent = r.read()
    assert b"badgeline_agent_print_duration_seconds_bucket" in agent
    # WHEN promtool lints what Prometheus scraped, THEN it finds nothing to fix
    for exposition in (coordinator, agent):
        check = subprocess.run(["promtool", "check", "metrics"], input=exposition,
                               capture_output=True, timeout=60)  # fmt: skip
        assert check.returncode == 0, check.stdout.decode() + check.stderr.decode()
        assert check.stdout.decode().strip() == ""
