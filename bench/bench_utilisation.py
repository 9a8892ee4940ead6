"""Printer utilisation at every print speed: a printer with work never idles, and never doubts.

    .venv/bin/python bench/bench_utilisation.py [--scale 1.0] [--speeds 0.5,2,5,10,30]

A benchmark, not a test: it prints figures and asserts nothing. One venue of
real processes (`LocalVenue`: coordinator with embedded Redis, one emulator
and one agent per speed, all with their shipped settings and the emulator's
default 16 KB receive buffer), every printer given its badges at once, all
speeds side by side in one run.

Per printer, from the emulator's own `/printed` rows (the ground truth):

- utilisation = time the head spent printing (the sum of at - started_at) ÷ wall time
  while it had work (from the submit of its first badge to its last badge out);
- the same from its first byte (excluding scan to first byte);
- badges printed, printed twice, and the agent's `uncertain` reports and the
  coordinator's `possible_duplicate` flags and retries (all must be 0).

Goal: ≥ 0.97 at every speed with 0 uncertain. `--scale` multiplies the badge
counts (0.5: a shorter run).
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# Run from a checkout without installing: make `badgeline` importable.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchkit import git_revision, load_average

from badgeline.localvenue import LocalVenue, wait_until
from badgeline.samples import sample_badge_pdf

TARGET = 0.97
# Badges per speed: enough that a few hundred ms of start-up weigh under 1 %.
BADGES = {0.5: 40, 2.0: 20, 5.0: 12, 10.0: 8, 30.0: 4}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiply the badge counts")
    parser.add_argument("--speeds", default=",".join(f"{s:g}" for s in BADGES),
                        help="seconds a badge, comma-separated")  # fmt: skip
    args = parser.parse_args()
    speeds = [float(text) for text in args.speeds.split(",")]
    printers = {f"printer-u{n}": speed for n, speed in enumerate(speeds)}
    with tempfile.TemporaryDirectory(prefix="bench-utilisation-") as root:
        venue = LocalVenue(Path(root), printer_ids=tuple(printers),
                           extra_coordinator_config={"mdns": False})  # fmt: skip
        venue.start()
        try:
            rows = run(venue, printers, args.scale)
        finally:
            venue.stop()
    report(rows)


def run(venue: LocalVenue, printers: dict[str, float], scale: float) -> list[dict[str, Any]]:
    ref = venue.upload_badge(sample_badge_pdf("A-UTIL"))
    for printer_id, speed in printers.items():
        venue.set_speed(printer_id, int(speed * 1000))
    jobs: dict[str, list[str]] = {}
    submitted_at: dict[str, float] = {}
    for printer_id, speed in printers.items():
        count = max(2, round(BADGES.get(speed, 10) * scale))
        submitted_at[printer_id] = time.time()
        jobs[printer_id] = [venue.submit(printer_id, f"att-{printer_id}-{n:03d}", ref)["job_id"]
                            for n in range(count)]  # fmt: skip
    longest_s = max(speed * len(jobs[p]) for p, speed in printers.items())
    every_job = [job_id for job_ids in jobs.values() for job_id in job_ids]

    def all_final() -> bool:
        return all(venue.job(job_id)["state"] in ("printed", "failed") for job_id in every_job)

    wait_until(all_final, longest_s * 1.5 + 60, "every badge to print")
    printed = venue.printed_rows()
    return [measure(venue, p, printers[p], jobs[p], submitted_at[p], printed) for p in printers]


def measure(venue: LocalVenue, printer_id: str, speed: float, job_ids: list[str],
            submitted_at: float, printed: list[dict[str, Any]]) -> dict[str, Any]:  # fmt: skip
    rows = [row for row in printed if row["printer_id"] == printer_id]
    busy_s = sum(row["at"] - row["started_at"] for row in rows)
    first_start = min(row["started_at"] for row in rows)
    last_out = max(row["at"] for row in rows)
    counts = collections.Counter(row["job_id"] for row in rows)
    views = [venue.job(job_id) for job_id in job_ids]
    return {
        "printer": printer_id,
        "s_per_badge": speed,
        "badges": len(job_ids),
        "printed": sum(1 for job_id in job_ids if counts[job_id] >= 1),
        "printed_twice": sum(1 for job_id in job_ids if counts[job_id] > 1),
        "utilisation": busy_s / (last_out - submitted_at),
        "utilisation_from_first_byte": busy_s / (last_out - first_start),
        "uncertain_reports": uncertain_reports(venue, printer_id),
        "possible_duplicates": sum(1 for view in views if view["possible_duplicate"]),
        "retries": sum(view["attempts"] for view in views),
    }


def uncertain_reports(venue: LocalVenue, printer_id: str) -> int:
    log = venue.root / "logs" / f"agent-{printer_id}.log"
    events = (json.loads(line) for line in log.read_text().splitlines() if line.startswith("{"))
    return sum(1 for event in events if event.get("event") == "print_uncertain")


def report(rows: list[dict[str, Any]]) -> None:
    print(f"printer utilisation  commit {git_revision()}  load {load_average()}")
    print(f"{'s/badge':>8} {'badges':>6} {'util':>6} {'from 1st byte':>13} {'twice':>5} "
          f"{'uncertain':>9} {'flagged':>7} {'retries':>7}  met")  # fmt: skip
    for row in rows:
        met = row["utilisation"] >= TARGET and row["uncertain_reports"] == 0
        print(f"{row['s_per_badge']:>8g} {row['badges']:>6} {row['utilisation']:>6.3f} "
              f"{row['utilisation_from_first_byte']:>13.3f} {row['printed_twice']:>5} "
              f"{row['uncertain_reports']:>9} {row['possible_duplicates']:>7} "
              f"{row['retries']:>7}  {'yes' if met else 'NO'}")  # fmt: skip
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
