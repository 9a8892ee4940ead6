"""What a Prometheus scrape reads of the venue: the fleet's rows with their queue
flags, the census of open jobs, the active alerts and the venue's counters.

All of it is venue-wide, read from Redis at the scrape: any replica answers the
same numbers, so a dashboard takes max() over replicas, never sum(). The
counters are counted by the Lua scripts in the step that changes a job
(scripts/includes/tally.lua), so they never go down and never miss a change,
whichever replica made it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from badgeline.coordinator.control.alerts import alerts_of
from badgeline.coordinator.control.census import take_census
from badgeline.coordinator.control.failover import FailoverController
from badgeline.coordinator.control.fleet import DEFAULT_STALL_AFTER_S, queue_report
from badgeline.coordinator.store import Store
from badgeline.coordinator.store.reports import Census, PrinterCounters
from badgeline.discovery.agents import AgentBrowser
from badgeline.protocol.states import TERMINAL_STATES, JobState

# The queue flags of control/fleet.py, each exported for every printer (0 or 1).
QUEUE_FLAGS = ("full", "skewed", "stalled", "zombie")
# The job states a gauge counts: the open ones, and failed jobs (they wait in the
# dead-letter list for a redrive). Printed and canceled only grow: they are counters.
GAUGED_STATES = tuple(str(s) for s in JobState if s not in TERMINAL_STATES or s == "failed")


@dataclass(frozen=True)
class VenueReading:
    rows: list[dict[str, Any]]  # control/fleet.queue_report
    census: Census
    alerts: list[dict[str, Any]]  # control/alerts.alerts_of
    counters: PrinterCounters
    dead_letters: int
    high_water_mark: int

    @property
    def printer_ids(self) -> list[str]:
        """Every printer the venue knows, and any a counter names (sorted)."""
        named = {printer for (_, printer) in self.counters.by_printer if printer}
        return sorted(named | {row["printer_id"] for row in self.rows})

    def jobs_by_state(self) -> dict[str, int]:
        counts = dict.fromkeys(GAUGED_STATES, 0)
        for job in self.census.jobs:
            if job.state in counts:
                counts[job.state] += 1
        return counts

    def jobs_by_printer(self, state: JobState) -> dict[str, int]:
        """Open jobs in `state` per printer, 0 for a printer with none."""
        counts = dict.fromkeys(self.printer_ids, 0)
        for job in self.census.jobs:
            if job.state == state and job.printer_id:
                counts[job.printer_id] = counts.get(job.printer_id, 0) + 1
        return counts

    def oldest_open_age_s(self) -> dict[str, float]:
        """Per open state, the age of its oldest job since acceptance (states with jobs)."""
        oldest: dict[str, int] = {}
        for job in self.census.jobs:
            if job.live:
                oldest[job.state] = min(oldest.get(job.state, job.created_ms), job.created_ms)
        return {state: (self.census.now_ms - created) / 1000 for state, created in oldest.items()}

    def count(self, event: str, printer_id: str) -> int:
        return self.counters.by_printer.get((event, printer_id), 0)


async def read_venue(
    store: Store, browser: AgentBrowser | None, failover: FailoverController
) -> VenueReading:
    rows = await queue_report(store, browser, DEFAULT_STALL_AFTER_S)
    return VenueReading(
        rows=rows,
        census=await take_census(store, failover),
        alerts=await alerts_of(store, rows),
        counters=await store.reports.counters(),
        dead_letters=await store.jobs.dead_letter_count(),
        high_water_mark=store.settings.high_water_mark,
    )
