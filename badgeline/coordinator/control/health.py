"""Turning what an agent's probe saw into a printer verdict."""

from __future__ import annotations

from badgeline.protocol.models import PrinterHealthReport
from badgeline.protocol.states import PaperLevel, PrinterState


def classify_report(report: PrinterHealthReport) -> PrinterState:
    """One heartbeat's verdict. A jam, an open cover, no paper, no ribbon or a
    paused printer (a Zebra's) cannot print until someone comes, so they are dead
    at once; an unreachable printer or low paper may still recover by itself and
    is only degraded."""
    if report.jammed or report.cover_open or report.paper is PaperLevel.OUT:
        return PrinterState.DEAD
    if report.paused or report.ribbon_pct == 0:
        return PrinterState.DEAD
    if not report.reachable or report.paper is PaperLevel.LOW:
        return PrinterState.DEGRADED
    return PrinterState.HEALTHY


def probe_verdict(report: PrinterHealthReport) -> str:
    """How one probe counts toward the printer's state (see heartbeat-4.lua):
    `fatal` kills it at once, `failed` is one consecutive failure, `low` degrades."""
    verdict = classify_report(report)
    if verdict is PrinterState.DEAD:
        return "fatal"
    if not report.reachable:
        return "failed"
    return "low" if verdict is PrinterState.DEGRADED else "ok"
