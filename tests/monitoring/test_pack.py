"""The monitoring pack without a server: promtool finds the rules valid and their
unit tests (badgeline-rules.test.yml) pass, the sample Prometheus config is valid,
and the Grafana dashboard is one Grafana can provision. That every query returns
data from a live venue is test_live_prometheus.py's."""

from __future__ import annotations

import subprocess

from tests.monitoring.pack import (
    DASHBOARD_VARIABLES,
    RULE_TESTS,
    RULES,
    SAMPLE_CONFIG,
    dashboard,
    dashboard_queries,
    metric_names,
    panels,
    rules,
)


def promtool(*args: str) -> str:
    done = subprocess.run(["promtool", *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_the_rules_are_valid_and_their_unit_tests_pass() -> None:
    # GIVEN the alert rules, WHEN promtool checks and unit-tests them
    checked = promtool("check", "rules", str(RULES))
    tested = promtool("test", "rules", str(RULE_TESTS))
    # THEN they are valid, and every alert behaves as its tests say
    assert f"SUCCESS: {len(rules())} rules found" in checked
    assert "SUCCESS" in tested


def test_every_alert_has_a_unit_test_a_severity_and_a_summary() -> None:
    tests = RULE_TESTS.read_text(encoding="utf-8")
    for rule in rules():
        name = rule["alert"]
        assert f"alertname: {name}\n" in tests, f"{name} has no unit test"
        assert rule["annotations"]["summary"] and rule["annotations"]["description"], name
        # The coordinator's own alerts carry theirs in the badgeline_alert series.
        assert rule.get("labels", {}).get("severity") in ("critical", "warning") or (
            "severity" in rule["expr"]
        ), name


def test_the_sample_prometheus_config_is_valid() -> None:
    # (its token file is the operator's to write: syntax only)
    assert "SUCCESS" in promtool("check", "config", "--syntax-only", str(SAMPLE_CONFIG))


def test_the_dashboard_is_provisionable() -> None:
    board = dashboard()
    # GIVEN the dashboard JSON, THEN it has a fixed uid (provisioning updates it in
    # place), picks its Prometheus data source by a variable, and lays out its panels
    assert board["uid"] == "badgeline-venue" and board["title"]
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    ids = [panel["id"] for panel in board["panels"]]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    for panel in panels():
        position = panel["gridPos"]
        assert position["x"] + position["w"] <= 24, panel["title"]
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        assert panel["targets"], f"{panel['title']} has no query"
        assert panel.get("description"), f"{panel['title']} says nothing about itself"
        for target in panel["targets"]:
            assert target["datasource"] == panel["datasource"]
    # AND every variable a query uses is one the test can put in
    for title, expr in dashboard_queries():
        assert "$" not in expr, f"{title}: a variable no test fills in: {expr}"
    assert set(DASHBOARD_VARIABLES) >= {"$printer", "$__rate_interval"}


def test_the_metric_names_are_read_from_queries() -> None:
    # The live test checks every name the rules and the dashboard use against what a
    # venue exports: it must find them, and nothing that is not a series.
    expr = ('histogram_quantile(0.99, sum by (instance, le) (rate('
            'badgeline_event_loop_lag_seconds_bucket{job="badgeline-coordinator"}[5m])))'
            ' > 0.05 or up{job="x"} == 0')  # fmt: skip
    assert metric_names(expr) == {"badgeline_event_loop_lag_seconds_bucket", "up"}
