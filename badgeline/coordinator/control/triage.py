"""The dashboard's printers in order of trouble, each with its condition in words.

A condition says what an operator should do about a printer, most urgent first:

    dead       nothing prints and badgeline cannot say why (no heartbeat, the
               printer unreachable): go to the agent's Pi and the printer
    jammed     jammed or cover open: clear it at the printer
    paper_out  load paper
    degraded   still printing but gets no new routed work (paper low, a probe missed)
    paused     an operator paused it: its queue waits
    draining   an operator drained it: its queue moved, what was printing finishes
    rejecting  an operator rejected new jobs for it: its queue finishes, nothing joins
    backlog    healthy and unpaused, but more work waits than it clears quickly
    healthy    nothing to do

The verdict is the coordinator's (state, health, pause); this module only names
and ranks it. Within a condition the printer with most waiting goes first.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Any

from badgeline.coordinator.control.fleet import UNTIL_RESUMED_S
from badgeline.coordinator.control.trend import PrinterTrend


class Condition(StrEnum):
    DEAD = "dead"
    JAMMED = "jammed"
    PAPER_OUT = "paper_out"
    DEGRADED = "degraded"
    PAUSED = "paused"
    DRAINING = "draining"
    REJECTING = "rejecting"
    BACKLOG = "backlog"
    HEALTHY = "healthy"


RANK = {condition: rank for rank, condition in enumerate(Condition)}
# A backlog: the queue holds this share of the high-water mark, or more minutes
# of work than this at the printer's current rate.
BACKLOG_SHARE = 0.25
BACKLOG_MINUTES = 5.0
# A drain pauses the printer until resumed, read just before its decision is
# taken: the decision's time is this close below the pause's end minus a year.
DRAIN_PAUSE_SLACK_S = 60.0


def triage(
    printers: list[dict[str, Any]],
    decisions: list[dict[str, Any]],
    *,
    high_water_mark: int,
    stale_after_s: float,
    trend_of: Callable[[str], PrinterTrend],
) -> list[dict[str, Any]]:
    """One row per printer of `GET /v1/printers`, most troubled first."""
    rows = []
    for printer in printers:
        trend = trend_of(printer["printer_id"])
        drained = _drained(printer, decisions)
        rate = trend.badges_per_min
        condition, label, detail = _condition(
            printer, drained, high_water_mark, stale_after_s, rate
        )
        depth = printer["queue_depth"]
        rows.append({
            "printer_id": printer["printer_id"], "condition": str(condition),
            "rank": RANK[condition], "label": label, "detail": detail, "drained": drained,
            "wait_min": round(depth / rate, 1) if rate else None,
            "trend": trend.to_json(),
        })  # fmt: skip
    depth = {p["printer_id"]: p["queue_depth"] for p in printers}
    rows.sort(key=lambda r: (r["rank"], -depth[r["printer_id"]], r["printer_id"]))
    return rows


def _drained(printer: dict[str, Any], decisions: list[dict[str, Any]]) -> bool:
    """Whether the printer's pause is the one its latest drain set (decisions are
    newest first; a pause or resume since then makes it a plain pause)."""
    until = printer.get("paused_until")
    if not printer["paused"] or until is None:
        return False
    for decision in decisions:
        if decision.get("dead_printer_id") != printer["printer_id"]:
            continue
        if not str(decision.get("decision_id", "")).startswith("drain-"):
            return False  # its latest decision was a failover, not a drain
        gap = until - UNTIL_RESUMED_S - float(decision.get("decided_at") or 0)
        return -DRAIN_PAUSE_SLACK_S <= gap <= DRAIN_PAUSE_SLACK_S
    return False


def _condition(
    printer: dict[str, Any], drained: bool, high_water_mark: int, stale_after_s: float,
    rate: float | None,
) -> tuple[Condition, str, str]:  # fmt: skip
    state, health = printer["state"], printer.get("health") or {}
    if state not in ("healthy", "degraded"):  # dead, or never heard from
        return _down(printer.get("last_heartbeat_age_s"), health, stale_after_s)
    if state == "degraded":
        return Condition.DEGRADED, "degraded", _problem(health) or "gets no new work"
    if printer["paused"]:
        return _paused(printer, drained)
    depth = printer["queue_depth"]
    if printer.get("rejecting"):
        left = f"{depth} left to print" if depth else "its queue is done"
        return Condition.REJECTING, "rejecting", f"takes no new jobs; {left}"
    minutes = depth / rate if rate else None
    deep = depth >= BACKLOG_SHARE * high_water_mark
    slow = minutes is not None and minutes >= BACKLOG_MINUTES
    if depth > 0 and (deep or slow):
        wait = f", about {minutes:.0f} min of work" if minutes is not None else ""
        return Condition.BACKLOG, "backlog", f"{depth} waiting{wait}"
    return Condition.HEALTHY, "healthy", "printing" if printer["in_flight"] else "ready"


def _down(
    age: float | None, health: dict[str, Any], stale_after_s: float
) -> tuple[Condition, str, str]:
    # A silent agent first: the health it last sent is old news.
    if age is None:
        return Condition.DEAD, "dead", "no heartbeat yet"
    if age > stale_after_s:
        return Condition.DEAD, "dead", f"no heartbeat for {_duration(age)}"
    if health.get("jammed"):
        return Condition.JAMMED, "jammed", "clear the jam at the printer"
    if health.get("cover_open"):
        return Condition.JAMMED, "cover open", "close the printer's cover"
    if health.get("paper") == "out":
        return Condition.PAPER_OUT, "paper out", "load a new roll"
    return Condition.DEAD, "dead", _problem(health) or "the printer does not answer"


def _paused(printer: dict[str, Any], drained: bool) -> tuple[Condition, str, str]:
    if drained and printer["in_flight"]:
        return Condition.DRAINING, "draining", "its queue moved; finishing its badge"
    if drained:
        return Condition.DRAINING, "drained", "its queue moved to its peers"
    waiting = printer["queue_depth"]
    return Condition.PAUSED, "paused", f"{waiting} waiting for it" if waiting else "nothing waits"


def _problem(health: dict[str, Any]) -> str:
    if not health:
        return ""
    if not health.get("reachable", True):
        return "the printer does not answer its agent"
    if health.get("paper") == "low":
        return "paper low"
    return str(health.get("detail") or "")


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.0f} h"
