"""The venue-wide families of `GET /metrics`, from the reading the scrape just took
(control/monitoring.py). Every replica reports the same values: aggregate them
with max() over replicas, never sum(). docs/monitoring.md lists every family.

Per-printer families have a sample for every printer the venue knows, 0 where
nothing happened yet: a counter that first appears at 1 would hide its first
increase from rate() and increase().
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from badgeline.coordinator.control.monitoring import QUEUE_FLAGS, VenueReading
from badgeline.protocol.states import JobState, PrinterState

VENUE_WIDE = " (venue-wide: every replica reports the same value; aggregate with max)"

# (family name without _total, the event counted in Redis, what it counts)
PRINTER_COUNTERS = (
    ("badgeline_jobs_printed", "printed",
     "Jobs printed, counted once per job at its first reported print, by the printer"),
    ("badgeline_print_failures", "failed",
     "Print attempts acked failed (each is retried or fails the job), by printer"),
    ("badgeline_print_uncertain", "uncertain",
     "Print attempts whose outcome is unknown: acked uncertain, or left unacked when the"
     " printer's failover grace ran out, by printer"),
    ("badgeline_possible_duplicates", "possible_duplicate",
     "Jobs sent to print again without knowing whether the attempt on this printer"
     " printed (flagged possible_duplicate)"),
    ("badgeline_duplicate_prints", "duplicate_print",
     "Prints reported for a job that had already printed: a badge came out more than"
     " once, by the printer of the extra print"),
    ("badgeline_jobs_shed", "shed",
     "Submissions shed by backpressure (dead-lettered, 503 queue_full), by target printer"),
    ("badgeline_failovers", "failover",
     "Failover decisions (a dead printer's, or a drain), by the printer failed over"),
)  # fmt: skip
VENUE_COUNTERS = (
    ("badgeline_jobs_accepted", "accepted", "Jobs accepted"),
    ("badgeline_jobs_canceled", "canceled", "Jobs canceled"),
    (
        "badgeline_jobs_expired",
        "expired",
        "Jobs expired: not started by the deadline they were submitted with (expire_after_s)",
    ),
    ("badgeline_reprints", "reprints", "Reprints an operator asked for"),
)


class VenueCollector:
    """Yields the venue-wide families of the reading the scrape just took."""

    def __init__(self) -> None:
        self.reading: VenueReading | None = None

    def collect(self) -> Iterator[Metric]:
        reading = self.reading
        if reading is None:
            return
        yield from _counters(reading)
        yield from _printer_families(reading.rows)
        yield from _queue_families(reading)
        yield from _job_families(reading)
        yield _alerts(reading.alerts)


def _gauge(name: str, help_text: str, labels: list[str] | None = None) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, help_text + VENUE_WIDE, labels=labels)


def _counters(reading: VenueReading) -> Iterator[Metric]:
    printers = reading.printer_ids
    for name, event, help_text in PRINTER_COUNTERS:
        family = CounterMetricFamily(name, help_text + VENUE_WIDE, labels=["printer"])
        for printer_id in printers:
            family.add_metric([printer_id], reading.count(event, printer_id))
        yield family
    totals = reading.counters.totals
    for name, total, help_text in VENUE_COUNTERS:
        yield CounterMetricFamily(name, help_text + VENUE_WIDE, value=totals.get(total, 0))


def _printer_families(rows: list[dict[str, Any]]) -> Iterator[Metric]:
    age = _gauge("badgeline_heartbeat_age_seconds", "Seconds since the printer's last heartbeat",
                 ["printer"])  # fmt: skip
    state = _gauge("badgeline_printer_state", "1 for the printer's health verdict",
                   ["printer", "state"])  # fmt: skip
    paper = _gauge("badgeline_printer_paper_low", "1 when paper is low or out", ["printer"])
    paused = _gauge("badgeline_printer_paused", "1 when dispatch is paused", ["printer"])
    confirmation = _gauge(
        "badgeline_printer_confirmation",
        "1 for how the printer's badges are confirmed printed: process_id (the printer"
        " said so), status (healthy after the bytes), sent (write-only: bytes taken)",
        ["printer", "by"],
    )
    by_state = dict.fromkeys((str(s) for s in PrinterState), 0)
    for p in rows:
        name = p["printer_id"]
        if p["last_heartbeat_age_s"] is not None:
            age.add_metric([name], p["last_heartbeat_age_s"])
        for verdict in by_state:
            state.add_metric([name, verdict], 1.0 if p["state"] == verdict else 0.0)
        by_state[p["state"]] = by_state.get(p["state"], 0) + 1
        low = (p["health"] or {}).get("paper") in ("low", "out")
        paper.add_metric([name], 1.0 if low else 0.0)
        paused.add_metric([name], 1.0 if p["paused"] else 0.0)
        if p.get("confirmation"):
            confirmation.add_metric([name, p["confirmation"]], 1.0)
    printers = _gauge("badgeline_printers", "Printers by health verdict", ["state"])
    for verdict, count in by_state.items():
        printers.add_metric([verdict], count)
    yield from (age, state, printers, paper, paused, confirmation)


def _queue_families(reading: VenueReading) -> Iterator[Metric]:
    depth = _gauge("badgeline_queue_depth", "Jobs waiting in the printer's queue", ["printer"])
    flags = _gauge(
        "badgeline_queue_flag",
        "1 when the printer's queue is full (at the high-water mark), skewed (rebalance"
        " would move work off it), stalled (its head waits 30 s or more) or zombie"
        " (stalled behind an agent that heartbeats)",
        ["printer", "flag"],
    )
    printing = _gauge("badgeline_printing_jobs", "Jobs granted a start on the printer and"
                      " not acked yet", ["printer"])  # fmt: skip
    for row in reading.rows:
        name = row["printer_id"]
        depth.add_metric([name], row["queue_depth"])
        printing.add_metric([name], len(row["in_flight"]))
        for flag in QUEUE_FLAGS:
            flags.add_metric([name, flag], 1.0 if flag in row["flags"] else 0.0)
    leased = _gauge("badgeline_leased_jobs", "Jobs leased to the printer's agent and not"
                    " started yet", ["printer"])  # fmt: skip
    for name, count in reading.jobs_by_printer(JobState.LEASED).items():
        leased.add_metric([name], count)
    yield from (depth, flags, printing, leased)
    yield GaugeMetricFamily("badgeline_queue_high_water_mark",
                            "Most jobs one printer's queue takes (high_water_mark)" + VENUE_WIDE,
                            value=reading.high_water_mark)  # fmt: skip


def _job_families(reading: VenueReading) -> Iterator[Metric]:
    jobs = _gauge("badgeline_jobs", "Open jobs by state, and failed jobs awaiting a redrive",
                  ["state"])  # fmt: skip
    for state, count in sorted(reading.jobs_by_state().items()):
        jobs.add_metric([state], count)
    oldest = _gauge("badgeline_oldest_open_job_age_seconds",
                    "Age since acceptance of the oldest open job in each state (states with"
                    " open jobs only)", ["state"])  # fmt: skip
    for state, age_s in sorted(reading.oldest_open_age_s().items()):
        oldest.add_metric([state], age_s)
    yield from (jobs, oldest)
    yield GaugeMetricFamily("badgeline_dead_letters",
                            "Jobs in the dead-letter list (shed or failed)" + VENUE_WIDE,
                            value=reading.dead_letters)  # fmt: skip
    yield GaugeMetricFamily(
        "badgeline_jobs_printed_more_than_once",
        "Jobs with more than one print reported (GET /v1/reconcile lists them)" + VENUE_WIDE,
        value=reading.counters.printed_twice,
    )


def _alerts(alerts: list[dict[str, Any]]) -> Metric:
    family = _gauge("badgeline_alert", "1 for each active alert of GET /v1/alerts (printer is"
                    " empty for a venue alert)", ["name", "printer", "severity"])  # fmt: skip
    seen: set[tuple[str, str, str]] = set()
    for alert in alerts:
        labels = (alert["kind"], alert["printer_id"] or "", alert["severity"])
        if labels not in seen:  # one sample per label set, whatever the messages say
            seen.add(labels)
            family.add_metric(list(labels), 1.0)
    return family
