"""CPU per `job_enqueued` log line, through the coordinator's own logging set-up.

    .venv/bin/python bench/bench_log_line.py [--lines 50000] [--rounds 5]

Configures logging as the coordinator does (`configure_logging`: the JSON line
formatter on a StreamHandler, caller lookups off), points the handler at
/dev/null so that no terminal or pipe reader is measured, then logs the line an
accept writes (`log_event("job_enqueued", …)` with the accept's fields) `--lines`
times per round. Prints the median and range over rounds of the CPU per line,
the figure to set against an accept's CPU per job from bench_accept.py.

A benchmark, not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from badgeline.log import configure_logging, log_event

TRACE = {
    "job_id": "job_0123456789abcdef",
    "printer_id": "printer-a",
    "idempotency_key": "scan-0123456789abcdef",
    "correlation_id": "0123456789abcdef0123456789abcdef",
}


def one_round(lines: int) -> float:
    """CPU microseconds per line over `lines` lines."""
    started = time.process_time()
    for position in range(lines):
        log_event("job_enqueued", priority=100, position=position, **TRACE)
    return (time.process_time() - started) / lines * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=50_000, help="log lines per round")
    parser.add_argument("--rounds", type=int, default=5, help="rounds (the median is reported)")
    args = parser.parse_args()
    configure_logging("INFO")
    with open(os.devnull, "w") as sink:
        handler = logging.getLogger().handlers[0]
        assert isinstance(handler, logging.StreamHandler)
        handler.setStream(sink)
        per_line = [one_round(args.lines) for _ in range(args.rounds)]
    print(f"job_enqueued log line: median {statistics.median(per_line):.1f} µs of CPU "
          f"({min(per_line):.1f}-{max(per_line):.1f}) over {args.rounds} rounds of "
          f"{args.lines} lines; load average {os.getloadavg()[0]:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
