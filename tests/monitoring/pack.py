"""The monitoring pack in monitoring/, as the tests read it: the alert rules, the
Grafana dashboard's queries and the sample Prometheus config."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

MONITORING = Path(__file__).resolve().parents[2] / "monitoring"
RULES = MONITORING / "prometheus" / "badgeline-rules.yml"
RULE_TESTS = MONITORING / "prometheus" / "badgeline-rules.test.yml"
SAMPLE_CONFIG = MONITORING / "prometheus" / "prometheus.yml"
DASHBOARD = MONITORING / "grafana" / "badgeline-venue.json"
# What Grafana puts in for the dashboard's variables; a test's Prometheus scrapes
# every second, so a minute's window holds many samples.
DASHBOARD_VARIABLES = {"$__rate_interval": "1m", "$printer": ".*"}
_METRIC = re.compile(r"\b((?:badgeline|process)_[a-z0-9_]+|up)\b(?!\s*\()")


def rules() -> list[dict[str, Any]]:
    document = yaml.safe_load(RULES.read_text(encoding="utf-8"))
    return [rule for group in document["groups"] for rule in group["rules"]]


def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return loaded


def panels() -> list[dict[str, Any]]:
    return [panel for panel in dashboard()["panels"] if panel["type"] != "row"]


def dashboard_queries() -> list[tuple[str, str]]:
    """(panel title and refId, the query as Prometheus gets it) for every target."""
    queries = []
    for panel in panels():
        for target in panel["targets"]:
            expr = target["expr"]
            for variable, value in DASHBOARD_VARIABLES.items():
                expr = expr.replace(variable, value)
            queries.append((f"{panel['title']} {target['refId']}", expr))
    return queries


def metric_names(expr: str) -> set[str]:
    """The series names a query selects (not its functions, labels or strings)."""
    without_strings = re.sub(r'"[^"]*"', '""', expr)
    without_labels = re.sub(r"\{[^}]*\}", "", without_strings)
    without_groupings = re.sub(r"\b(by|without|on|ignoring)\s*\([^)]*\)", "", without_labels)
    return set(_METRIC.findall(without_groupings))
