"""Prometheus metrics on the agent's status port (`GET /metrics`).

Read from the /status document at scrape time, the same numbers a tech sees
there: nothing on the print path counts anything for this, and an agent
nobody scrapes never imports prometheus-client (the agent's memory budget on
a Pi is tight).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prometheus_client.core import Metric

PAPER_LEVELS = ("ok", "low", "out")


class _StatusCollector:
    """Yields the families for one /status document (see status.describe)."""

    def __init__(self, status: dict[str, Any]) -> None:
        self.status = status

    def collect(self) -> Iterator[Metric]:
        from prometheus_client.core import GaugeMetricFamily

        s = self.status
        printer, coordinator = s["printer"], s["coordinator"]
        labels = ["printer"]
        me = [s["printer_id"]]

        def gauge(name: str, help_text: str, value: float) -> GaugeMetricFamily:
            family = GaugeMetricFamily(name, help_text, labels=labels)
            family.add_metric(me, value)
            return family

        yield gauge("badgeline_agent_up", "1 while every agent loop runs",
                    0.0 if s["loops_not_running"] else 1.0)  # fmt: skip
        yield gauge("badgeline_agent_uptime_seconds", "Seconds since the agent started",
                    s["uptime_s"])  # fmt: skip
        yield gauge("badgeline_agent_printer_ready", "1 when the printer can print now",
                    1.0 if printer["ready"] else 0.0)  # fmt: skip
        yield gauge("badgeline_agent_printer_reachable", "1 when the printer answered its probe",
                    1.0 if printer["reachable"] else 0.0)  # fmt: skip
        yield gauge("badgeline_agent_printer_jammed", "1 when the printer reports a jam",
                    1.0 if printer["jammed"] else 0.0)  # fmt: skip
        yield gauge("badgeline_agent_printer_cover_open", "1 when the printer's cover is open",
                    1.0 if printer["cover_open"] else 0.0)  # fmt: skip
        paper = GaugeMetricFamily("badgeline_agent_paper", "1 for the printer's paper level",
                                  labels=["printer", "level"])  # fmt: skip
        for level in PAPER_LEVELS:
            paper.add_metric([*me, level], 1.0 if printer["paper"] == level else 0.0)
        yield paper
        confirmation = GaugeMetricFamily(
            "badgeline_agent_confirmation",
            "1 for how badges are confirmed printed (process_id, status, sent: write-only)",
            labels=["printer", "by"],
        )
        if printer.get("confirmation"):
            confirmation.add_metric([*me, printer["confirmation"]], 1.0)
        yield confirmation
        yield gauge("badgeline_agent_coordinator_reachable",
                    "1 when the coordinator answered the agent's last request",
                    1.0 if coordinator["reachable"] else 0.0)  # fmt: skip
        journal = GaugeMetricFamily("badgeline_agent_journal_jobs",
                                    "Jobs in the agent's journal, by local state",
                                    labels=["printer", "state"])  # fmt: skip
        for state, count in sorted((s["journal"] or {}).items()):
            journal.add_metric([*me, state], count)
        yield journal
        yield gauge("badgeline_agent_journal_readable", "0 when the journal cannot be read",
                    0.0 if s["journal_error"] else 1.0)  # fmt: skip


def render(status: dict[str, Any], accept: str) -> tuple[bytes, str]:
    """The exposition for `status` and its content type, as the scraper's Accept asks."""
    from prometheus_client import CollectorRegistry
    from prometheus_client.exposition import choose_encoder

    registry = CollectorRegistry()
    registry.register(_StatusCollector(status))
    encode, content_type = choose_encoder(accept)
    return encode(registry), content_type
