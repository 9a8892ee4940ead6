"""Operator reports: every queue at a glance, active alerts and their events,
reconciliation and usage statistics (the decisions behind them: control/fleet.py,
alerts.py, census.py). Each is a list, paged (paging.py), beside its summary."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from aiohttp import web
from pydantic import Field

from badgeline.coordinator.api.context import authenticate
from badgeline.coordinator.api.http import json_response, query_model
from badgeline.coordinator.api.paging import PageQuery, decode_cursor, page_from, page_of
from badgeline.coordinator.control.alerts import ALERT_KINDS, active_alerts
from badgeline.coordinator.control.census import reconcile_report, take_census
from badgeline.coordinator.control.fleet import DEFAULT_STALL_AFTER_S, queue_report
from badgeline.coordinator.control.rebalance import SKEW_MARGIN
from badgeline.protocol.pages import (
    AlertEventPage,
    AlertPage,
    QueueReport,
    ReconcilePage,
    StatsPage,
)

routes = web.RouteTableDef()


class QueuesQuery(PageQuery):
    stall_after_s: float = Field(default=DEFAULT_STALL_AFTER_S, ge=0.1, le=3600)


@routes.get("/v1/queues")
async def list_queues(request: web.Request) -> web.Response:
    coordinator, _ = authenticate(request, "operator")
    query = query_model(request, QueuesQuery)
    # Every row is read: a queue is flagged against its peers (skewed).
    rows = await queue_report(coordinator.store, coordinator.agent_browser, query.stall_after_s)
    page = page_of(rows, lambda row: [row["printer_id"]], "queues", query, (str,))
    fields = ("printer_id", "queue_depth", "state", "paused", "rejecting", "in_flight",
              "head_wait_s", "last_heartbeat_age_s", "flags")  # fmt: skip
    return json_response(QueueReport(
        high_water_mark=coordinator.settings.high_water_mark, skew_margin=SKEW_MARGIN,
        stall_after_s=query.stall_after_s, next=page.next,
        items=[{name: row[name] for name in fields} for row in page.items],
    ))  # fmt: skip


def _alert_position(alert: dict[str, Any]) -> list[Any]:
    """Each printer's alerts by printer id, then the venue's; in ALERT_KINDS order."""
    printer_id = alert["printer_id"]
    kind = ALERT_KINDS.index(alert["kind"]) if alert["kind"] in ALERT_KINDS else len(ALERT_KINDS)
    return [0 if printer_id else 1, printer_id or "", kind]


@routes.get("/v1/alerts")
async def list_alerts(request: web.Request) -> web.Response:
    coordinator, _ = authenticate(request, "operator")
    query = query_model(request, QueuesQuery)
    alerts = await active_alerts(coordinator.store, coordinator.agent_browser,
                                 query.stall_after_s)  # fmt: skip
    page = page_of(alerts, _alert_position, "alerts", query, (int, str, int))
    return json_response(AlertPage.model_validate({"items": page.items, "next": page.next}))


@routes.get("/v1/alerts/events")
async def list_alert_events(request: web.Request) -> web.Response:
    coordinator, _ = authenticate(request, "operator")
    query = query_model(request, PageQuery)
    after = decode_cursor(query.after, "alert-events", (str,))
    rows = await coordinator.store.reports.alert_event_page(
        after[0] if after else None, query.limit + 1
    )
    page = page_from(rows, lambda row: [row[0]], "alert-events", query.limit)
    return json_response(AlertEventPage(items=[event for _, event in page.items], next=page.next))


class ReconcileQuery(PageQuery):
    deadline_s: float = Field(default=300, ge=0, le=7 * 24 * 3600)


# The lists of the report, in the order its items come.
FINDINGS = ("printed_more_than_once", "possible_duplicates", "not_terminal")


@routes.get("/v1/reconcile")
async def reconcile(request: web.Request) -> web.Response:
    coordinator, _ = authenticate(request, "operator")
    query = query_model(request, ReconcileQuery)
    census = await take_census(coordinator.store, coordinator.failover)
    report = reconcile_report(census, query.deadline_s)
    found = [{"finding": name, **job} for name in FINDINGS for job in report[name]]
    page = page_of(found, lambda f: [FINDINGS.index(f["finding"]), f["job_id"]], "reconcile",
                   query, (int, str))  # fmt: skip
    return json_response(ReconcilePage.model_validate({
        "deadline_s": report["deadline_s"], "truncated": report["truncated"],
        "counts": report["counts"], "findings": {name: len(report[name]) for name in FINDINGS},
        "items": page.items, "next": page.next,
    }))  # fmt: skip


# --------------------------------------------------------------------------- stats


class StatsQuery(PageQuery):
    by: Literal["printer", "hour", "source"] = "printer"


STATS_KEY = {"printer": "printer_id", "hour": "hour", "source": "source"}


def _hour_label(hour_start_s: str) -> str:
    return datetime.fromtimestamp(int(hour_start_s), UTC).strftime("%Y-%m-%dT%H:00Z")


def _rows(by: str, counts: dict[str, int]) -> list[dict[str, Any]]:
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
    key = STATS_KEY[query.by]  # an hour's label sorts as its time does
    page = page_of(_rows(query.by, tallies.by_dimension), lambda row: [row[key]],
                   f"stats:{query.by}", query, (str,))  # fmt: skip
    return json_response(StatsPage(
        by=query.by, totals={name: totals.get(name, 0) for name in names},
        reprint_rate=totals.get("reprints", 0) / accepted if accepted else 0.0,
        failure_reasons=[{"reason": reason, "count": count} for reason, count
                         in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))],
        items=page.items, next=page.next,
    ))  # fmt: skip
