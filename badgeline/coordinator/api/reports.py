"""Operator reports: every queue at a glance, active alerts, reconciliation and
usage statistics (the decisions behind them: control/fleet.py, alerts.py, census.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from badgeline.coordinator.api.context import authenticate
from badgeline.coordinator.api.http import json_response, query_model
from badgeline.coordinator.control.alerts import active_alerts
from badgeline.coordinator.control.census import reconcile_report, take_census
from badgeline.coordinator.control.fleet import DEFAULT_STALL_AFTER_S, queue_report
from badgeline.coordinator.control.rebalance import SKEW_MARGIN

routes = web.RouteTableDef()


class QueuesQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")
    stall_after_s: float = Field(default=DEFAULT_STALL_AFTER_S, ge=0.1, le=3600)


@routes.get("/v1/queues")
async def list_queues(request: web.Request) -> web.Response:
    coordinator, _ = authenticate(request, "operator")
    query = query_model(request, QueuesQuery)
    rows = await queue_report(coordinator.store, coordinator.agent_browser, query.stall_after_s)
    fields = ("printer_id", "queue_depth", "state", "paused", "rejecting", "in_flight",
              "head_wait_s", "last_heartbeat_age_s", "flags")  # fmt: skip
    return json_response({
        "high_water_mark": coordinator.settings.high_water_mark, "skew_margin": SKEW_MARGIN,
        "stall_after_s": query.stall_after_s,
        "queues": [{name: row[name] for name in fields} for row in rows],
    })  # fmt: skip


@routes.get("/v1/alerts")
async def list_alerts(request: web.Request) -> web.Response:
    coordinator, _ = authenticate(request, "operator")
    query = query_model(request, QueuesQuery)
    store = coordinator.store
    return json_response({
        "alerts": await active_alerts(store, coordinator.agent_browser, query.stall_after_s),
        "events": await store.reports.alert_events(),
    })  # fmt: skip


class ReconcileQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")
    deadline_s: float = Field(default=300, ge=0, le=7 * 24 * 3600)


@routes.get("/v1/reconcile")
async def reconcile(request: web.Request) -> web.Response:
    coordinator, _ = authenticate(request, "operator")
    query = query_model(request, ReconcileQuery)
    census = await take_census(coordinator.store, coordinator.failover)
    return json_response(reconcile_report(census, query.deadline_s))


# --------------------------------------------------------------------------- stats


class StatsQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")
    by: Literal["printer", "hour", "source"] = "printer"


def _hour_label(hour_start_s: str) -> str:
    return datetime.fromtimestamp(int(hour_start_s), UTC).strftime("%Y-%m-%dT%H:00Z")


def _rows(by: str, counts: dict[str, int]) -> list[dict[str, object]]:
    if by == "printer":
        printers = sorted({key.split("|", 1)[1] for key in counts})
        return [{"printer_id": p, "printed": counts.get(f"printed|{p}", 0),
                 "failed_attempts": counts.get(f"failed|{p}", 0)} for p in printers]  # fmt: skip
    if by == "hour":
        return [{"hour": _hour_label(h), "printed": counts[h]} for h in sorted(counts, key=int)]
    return [{"source": source, "printed": counts[source]} for source in sorted(counts)]


@routes.get("/v1/stats")
async def stats(request: web.Request) -> web.Response:
    coordinator, _ = authenticate(request, "operator")
    query = query_model(request, StatsQuery)
    tallies = await coordinator.store.reports.tallies(query.by)
    totals, reasons = tallies.totals, tallies.failure_reasons
    names = ("accepted", "printed", "shed", "canceled", "expired", "reprints", "failed_attempts")
    accepted = totals.get("accepted", 0)
    return json_response({
        "by": query.by,
        "rows": _rows(query.by, tallies.by_dimension),
        "totals": {name: totals.get(name, 0) for name in names},
        "reprint_rate": totals.get("reprints", 0) / accepted if accepted else 0.0,
        "failure_reasons": [{"reason": reason, "count": count} for reason, count
                            in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))],
    })  # fmt: skip
