"""Active alerts: what an operator must act on now, from the fleet and the venue's
problem counts."""

from __future__ import annotations

from typing import Any

from badgeline.coordinator.control.fleet import can_take_work, queue_report
from badgeline.coordinator.store import Store
from badgeline.discovery.agents import AgentBrowser

# Every kind of alert, in the order a printer's (then the venue's) are listed.
ALERT_KINDS = ("printer_dead", "paper_low", "queue_stalled", "queue_full", "no_healthy_target",
               "parked_jobs", "duplicate_prints", "dead_letters")  # fmt: skip


def _alert(kind: str, severity: str, message: str, printer_id: str | None = None) -> dict[str, Any]:
    return {"kind": kind, "severity": severity, "printer_id": printer_id, "message": message}


def _why_dead(health: dict[str, Any] | None) -> str:
    if not health:
        return "no heartbeat"
    causes = [name for name in ("jammed", "cover_open") if health.get(name)]
    if health.get("paper") == "out":
        causes.append("paper out")
    if not health.get("reachable", True):
        causes.append("unreachable")
    return ", ".join(causes) or "missed heartbeats"


def _printer_alerts(row: dict[str, Any]) -> list[dict[str, Any]]:
    printer_id, health = row["printer_id"], row["health"] or {}
    alerts = []
    if row["state"] == "dead":
        message = f"{printer_id} is dead ({_why_dead(health)})"
        alerts.append(_alert("printer_dead", "critical", message, printer_id))
    if health.get("paper") == "low":
        message = f"{printer_id} is low on paper: load a new roll"
        alerts.append(_alert("paper_low", "warning", message, printer_id))
    if "zombie" in row["flags"]:
        message = (f"{printer_id} heartbeats but has not taken its head job for "
                   f"{row['head_wait_s']:.0f} s: drain it")  # fmt: skip
        alerts.append(_alert("queue_stalled", "critical", message, printer_id))
    if "full" in row["flags"]:
        message = f"{printer_id} is at its high-water mark"
        alerts.append(_alert("queue_full", "warning", message, printer_id))
    return alerts


async def _venue_alerts(store: Store, rows: list[dict[str, Any]]) -> list[Any]:
    counts = await store.reports.problem_counts()
    alerts = []
    if rows and not any(can_take_work(r) for r in rows):
        message = "no printer is healthy and unpaused: new work is parked"
        alerts.append(_alert("no_healthy_target", "critical", message))
    if counts.parked:
        message = f"{counts.parked} job(s) parked with no healthy printer to go to"
        alerts.append(_alert("parked_jobs", "critical", message))
    if counts.printed_twice:
        message = f"{counts.printed_twice} job(s) printed more than once: run reconcile"
        alerts.append(_alert("duplicate_prints", "critical", message))
    if counts.dead_letters:
        message = f"{counts.dead_letters} dead-lettered job(s): list and redrive them"
        alerts.append(_alert("dead_letters", "warning", message))
    return alerts


async def alerts_of(store: Store, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The alerts that follow from a queue report's rows (and the venue's problem counts)."""
    alerts = [alert for row in rows for alert in _printer_alerts(row)]
    return alerts + await _venue_alerts(store, rows)


async def active_alerts(
    store: Store, browser: AgentBrowser | None, stall_after_s: float
) -> list[dict[str, Any]]:
    return await alerts_of(store, await queue_report(store, browser, stall_after_s))
