"""The agent's /metrics exposition, written without prometheus-client: it passes
`promtool check metrics`, parses as Prometheus reads it, and rendering it in a
fresh interpreter loads neither prometheus-client nor anything heavy (the Pi's
idle memory budget)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from prometheus_client.parser import text_string_to_metric_families

from badgeline.agent.metrics import PRINT_DURATION_BUCKETS_S, PrintMetrics, render

STATUS = {
    "printer_id": "printer-a", "version": "0.1.0", "uptime_s": 12.5, "loops_not_running": [],
    "printer": {"ready": True, "reachable": True, "jammed": False, "cover_open": False,
                "paper": "low", "confirmation": "process_id"},
    "coordinator": {"reachable": True},
    "journal": {"acked": 3, "printed": 1}, "journal_error": None,
}  # fmt: skip

RENDER_IN_A_FRESH_INTERPRETER = f"""
import json, sys
import badgeline.agent.main, badgeline.agent.service
from badgeline.agent.metrics import PrintMetrics, render
prints = PrintMetrics()
prints.record("printed", 1.5)
body, content_type = render(json.loads({json.dumps(json.dumps(STATUS))}), prints)
heavy = ("prometheus_client", "email", "http.server", "wsgiref", "aiohttp")
print(json.dumps({{"loaded": sorted(m for m in sys.modules if m.split(".")[0] in heavy
                                   or m in heavy), "content_type": content_type}}))
"""


def _families(body: bytes) -> dict[str, dict[tuple[str, tuple[tuple[str, str], ...]], float]]:
    found: dict[str, dict[tuple[str, tuple[tuple[str, str], ...]], float]] = {}
    for family in text_string_to_metric_families(body.decode()):
        found[family.name] = {(s.name, tuple(sorted(s.labels.items()))): s.value
                              for s in family.samples}  # fmt: skip
    return found


def test_rendering_the_metrics_loads_nothing_heavy() -> None:
    # GIVEN the agent's modules in a fresh interpreter, as a Pi runs them
    # WHEN a scrape renders the metrics
    out = subprocess.run([sys.executable, "-c", RENDER_IN_A_FRESH_INTERPRETER],
                         capture_output=True, text=True, timeout=60, check=True).stdout  # fmt: skip
    result = json.loads(out)
    # THEN neither prometheus-client nor what it would bring was imported
    assert result["loaded"] == []
    assert result["content_type"] == "text/plain; version=0.0.4; charset=utf-8"


def test_the_exposition_counts_and_times_each_result() -> None:
    # GIVEN an agent that printed three badges, failed one and could not confirm one
    prints = PrintMetrics()
    for seconds in (0.4, 1.5, 1.5):
        prints.record("printed", seconds)
    prints.record("failed", 0.2)
    prints.record("uncertain", 60.5)
    # WHEN Prometheus scrapes it
    body, _ = render(STATUS, prints)
    families = _families(body)
    # THEN each result is a counter sample, 0 where nothing happened
    me = ("printer", "printer-a")
    counts = families["badgeline_agent_prints"]
    assert counts[("badgeline_agent_prints_total", (me, ("result", "printed")))] == 3
    assert counts[("badgeline_agent_prints_total", (me, ("result", "uncertain")))] == 1
    # AND the histogram's buckets are cumulative, in seconds, ending at +Inf
    durations = families["badgeline_agent_print_duration_seconds"]

    def bucket(result: str, le: str) -> float:
        return durations[("badgeline_agent_print_duration_seconds_bucket",
                          (("le", le), me, ("result", result)))]  # fmt: skip

    assert [bucket("printed", repr(b)) for b in PRINT_DURATION_BUCKETS_S[:3]] == [1, 1, 3]
    assert bucket("printed", "+Inf") == 3
    assert bucket("uncertain", "60.0") == 0 and bucket("uncertain", "120.0") == 1
    assert durations[("badgeline_agent_print_duration_seconds_sum",
                      (me, ("result", "printed")))] == pytest.approx(3.4)  # fmt: skip
    # AND the gauges of /status and the process are there
    assert families["badgeline_agent_paper"][("badgeline_agent_paper",
                                              (("level", "low"), me))] == 1  # fmt: skip
    assert families["process_resident_memory_bytes"][("process_resident_memory_bytes", ())] > 0
    assert families["process_start_time_seconds"][("process_start_time_seconds", ())] > 1e9


def test_promtool_finds_nothing_to_fix() -> None:
    # GIVEN the exposition of an agent with every result recorded and a sick journal
    prints = PrintMetrics()
    for result in ("printed", "failed", "uncertain"):
        prints.record(result, 2.0)
    body, _ = render({**STATUS, "journal": None, "journal_error": "disk I/O error"}, prints)
    # WHEN promtool lints it, THEN it is valid and follows the naming conventions
    check = subprocess.run(["promtool", "check", "metrics"], input=body, capture_output=True,
                           timeout=60)  # fmt: skip
    assert check.returncode == 0, check.stdout.decode() + check.stderr.decode()
    assert check.stdout.decode().strip() == ""
