"""Prometheus metrics on the agent's status port (`GET /metrics`).

The text format (version 0.0.4) is written here, not by prometheus-client:
importing that library costs an agent 2.3 MB (it brings http.server, email
and wsgiref), past the Pi's idle memory budget once Prometheus scrapes it.

Gauges are read from the /status document at scrape time, the same numbers a
tech sees there. The print counters and the print-duration histogram are
kept by `PrintMetrics`, which the print loop calls once per badge, where it
journals the outcome: a few integers, nothing imported. They count from the
agent's start (per process, like any counter: rate() copes with restarts).
"""

from __future__ import annotations

import math
import os
from bisect import bisect_left
from typing import Any

from badgeline import __version__

PAPER_LEVELS = ("ok", "low", "out")
PRINT_RESULTS = ("printed", "failed", "uncertain")
# Seconds from a badge's start grant to its outcome. A thermal badge takes one to
# three; a card printer about thirty; an unconfirmed one waits out the confirm
# timeout (60 s by default).
PRINT_DURATION_BUCKETS_S = (0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class PrintMetrics:
    """The agent's print outcomes: a counter and a duration histogram per result."""

    def __init__(self) -> None:
        self.results = dict.fromkeys(PRINT_RESULTS, 0)
        # Per result: the count in each bucket (not cumulative; the last is +Inf) and the sum.
        self.buckets = {r: [0] * (len(PRINT_DURATION_BUCKETS_S) + 1) for r in PRINT_RESULTS}
        self.seconds = dict.fromkeys(PRINT_RESULTS, 0.0)

    def record(self, result: str, seconds: float) -> None:
        """One badge's outcome (printed, failed, uncertain), `seconds` after its grant."""
        seconds = max(0.0, seconds)
        self.results[result] = self.results.get(result, 0) + 1
        buckets = self.buckets.setdefault(result, [0] * (len(PRINT_DURATION_BUCKETS_S) + 1))
        buckets[bisect_left(PRINT_DURATION_BUCKETS_S, seconds)] += 1
        self.seconds[result] = self.seconds.get(result, 0.0) + seconds


class _Exposition:
    """Lines of the text format: each family's HELP and TYPE, then its samples."""

    def __init__(self, printer_id: str) -> None:
        self.lines: list[str] = []
        self.me = {"printer": printer_id}

    def family(self, name: str, kind: str, help_text: str) -> None:
        self.lines.append(f"# HELP {name} {_escape_help(help_text)}")
        self.lines.append(f"# TYPE {name} {kind}")

    def sample(self, name: str, value: float, **labels: str) -> None:
        pairs = ",".join(f'{k}="{_escape_label(v)}"' for k, v in {**self.me, **labels}.items())
        self.lines.append(f"{name}{{{pairs}}} {_number(value)}")

    def gauge(self, name: str, help_text: str, value: float) -> None:
        self.family(name, "gauge", help_text)
        self.sample(name, value)

    def flag(self, name: str, help_text: str, on: bool) -> None:
        self.gauge(name, help_text, 1.0 if on else 0.0)

    def text(self) -> bytes:
        return ("\n".join(self.lines) + "\n").encode("utf-8")


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if math.isnan(value):
        return "NaN"
    return repr(float(value))


def _status_families(out: _Exposition, s: dict[str, Any]) -> None:
    printer, coordinator = s["printer"], s["coordinator"]
    out.flag("badgeline_agent_up", "1 while every agent loop runs", not s["loops_not_running"])
    out.gauge("badgeline_agent_uptime_seconds", "Seconds since the agent started", s["uptime_s"])
    out.flag("badgeline_agent_printer_ready", "1 when the printer can print now",
             printer["ready"])  # fmt: skip
    out.flag("badgeline_agent_printer_reachable", "1 when the printer answered its probe",
             printer["reachable"])  # fmt: skip
    out.flag("badgeline_agent_printer_jammed", "1 when the printer reports a jam",
             printer["jammed"])  # fmt: skip
    out.flag("badgeline_agent_printer_cover_open", "1 when the printer's cover is open",
             printer["cover_open"])  # fmt: skip
    out.family("badgeline_agent_paper", "gauge", "1 for the printer's paper level")
    for level in PAPER_LEVELS:
        out.sample("badgeline_agent_paper", 1.0 if printer["paper"] == level else 0.0,
                   level=level)  # fmt: skip
    out.family(
        "badgeline_agent_confirmation",
        "gauge",
        "1 for how badges are confirmed printed (process_id, status, sent: write-only)",
    )
    if printer.get("confirmation"):
        out.sample("badgeline_agent_confirmation", 1.0, by=printer["confirmation"])
    out.flag("badgeline_agent_coordinator_reachable",
             "1 when the coordinator answered the agent's last request",
             coordinator["reachable"])  # fmt: skip
    out.family("badgeline_agent_journal_jobs", "gauge",
               "Jobs in the agent's journal, by local state")  # fmt: skip
    for state, count in sorted((s["journal"] or {}).items()):
        out.sample("badgeline_agent_journal_jobs", count, state=state)
    out.flag("badgeline_agent_journal_readable", "0 when the journal cannot be read",
             not s["journal_error"])  # fmt: skip
    out.family("badgeline_agent_build_info", "gauge", "The agent's release")
    out.sample("badgeline_agent_build_info", 1.0, version=s.get("version", __version__))


def _print_families(out: _Exposition, prints: PrintMetrics) -> None:
    name = "badgeline_agent_prints_total"
    out.family(name, "counter", "Badges this agent process printed, failed or could not"
               " confirm (uncertain) after their start grant, by result")  # fmt: skip
    for result, count in prints.results.items():
        out.sample(name, count, result=result)
    name = "badgeline_agent_print_duration_seconds"
    out.family(name, "histogram", "Seconds from a badge's start grant to its outcome, by result")
    for result, buckets in prints.buckets.items():
        running = 0
        for bound, count in zip((*PRINT_DURATION_BUCKETS_S, math.inf), buckets, strict=True):
            running += count
            out.sample(name + "_bucket", running, result=result,
                       le="+Inf" if math.isinf(bound) else repr(bound))  # fmt: skip
        out.sample(name + "_sum", prints.seconds[result], result=result)
        out.sample(name + "_count", running, result=result)


def _process_families(out: _Exposition) -> None:
    """What prometheus-client's process collector gives, read from /proc (Linux only)."""
    times = os.times()
    out.family("process_cpu_seconds_total", "counter", "User and system CPU time, in seconds")
    out.lines.append(f"process_cpu_seconds_total {_number(times.user + times.system)}")
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            virtual_pages, resident_pages = (int(n) for n in statm.read().split()[:2])
        open_fds = len(os.listdir("/proc/self/fd"))
        start_s = _start_time_s()
    except (OSError, ValueError):
        return  # not Linux: the rest has no portable source
    page = os.sysconf("SC_PAGE_SIZE")
    for name, help_text, value in (
        ("process_resident_memory_bytes", "Resident memory size, in bytes", resident_pages * page),
        ("process_virtual_memory_bytes", "Virtual memory size, in bytes", virtual_pages * page),
        ("process_open_fds", "Open file descriptors", open_fds),
        ("process_start_time_seconds", "Start time of the process since the Unix epoch, in"
         " seconds", start_s),
    ):  # fmt: skip
        out.family(name, "gauge", help_text)
        out.lines.append(f"{name} {_number(value)}")


def _start_time_s() -> float:
    with open("/proc/self/stat", encoding="ascii", errors="replace") as stat:
        # Field 22, counted after the parenthesised command name (which may hold spaces).
        ticks = int(stat.read().rpartition(")")[2].split()[19])
    with open("/proc/stat", encoding="ascii") as system:
        boot_s = next(int(line.split()[1]) for line in system if line.startswith("btime "))
    return boot_s + ticks / os.sysconf("SC_CLK_TCK")


def render(status: dict[str, Any], prints: PrintMetrics | None) -> tuple[bytes, str]:
    """The exposition for one /status document and the print counts, with its content type."""
    out = _Exposition(status["printer_id"])
    _status_families(out, status)
    _print_families(out, prints or PrintMetrics())
    _process_families(out)
    return out.text(), CONTENT_TYPE
