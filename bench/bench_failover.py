"""Failover time, counted at the printers: from the fault to the first drained badge.

    .venv/bin/python bench/bench_failover.py [--runs 7] [--drain-jobs 200] [--drain-runs 3]
        [--series silent,jam,drain] [--keep DIR]

Every series runs a venue of real processes with `badgeline.localvenue.LocalVenue`
(the coordinator with its embedded Redis, printer emulators, agents; heartbeats and
status probes every 1 s, the defaults). In each run printer-a holds a queue of
badges (an operator pause keeps them queued), then fails:

- silent death: its agent is SIGKILLed (a Pi losing power: no goodbye, no more
  heartbeats), so the coordinator learns of it from missed heartbeats alone
  (target: the first drained badge out within 3.5 s);
- reported jam: its emulator jams; the agent's next status probe sees it and its
  next heartbeat reports it (target: within 1.5 s);
- drain: a jam on printer-a with `--drain-jobs` queued, four printers, so three
  peers take the queue: time until the last of them has come out.

The failover time of a run is the fault's wall-clock time (taken just before the
kill or the fault request) to the `at` of the first badge of printer-a's queue in a
healthy emulator's `GET /printed` (the emulator's clock when the badge is cut:
its first byte arrived a little earlier; every process runs on this machine's one
clock). It is split at the failover decision's `decided_at` (the Redis clock) into
detection (fault -> decision) and dispatch (decision -> badge: lease wake-up,
fetch, render, print). The fault lands at a random moment of the agents' 1 s
heartbeat and probe cycles. Between runs the printer is brought back (agent
restarted or fault cleared, then three healthy heartbeats) and resumed.

A benchmark, not a test: it asserts nothing. Each run also reconciles the badges
of its queue at the emulators and prints any not printed exactly once. Everything
started is stopped at the end, and the working directory removed unless --keep.
"""

from __future__ import annotations

import argparse
import collections
import os
import platform
import random
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Run from a checkout without installing: make `badgeline` importable.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchkit import stop_venue

from badgeline.localvenue import LocalVenue, wait_until
from badgeline.samples import sample_badge_pdf

REPO = Path(__file__).resolve().parent.parent
DEAD = "printer-a"
QUEUED_PER_RUN = 10
TARGET_SILENT_S = 3.5
TARGET_JAM_S = 1.5
SERIES = ("silent", "jam", "drain")


@dataclass
class Run:
    fault_at: float
    decided_at: float
    first_print_at: float
    last_print_at: float
    targets: dict[str, int]
    not_once: dict[str, int] = field(default_factory=dict)

    @property
    def failover_s(self) -> float:
        return self.first_print_at - self.fault_at

    @property
    def detection_s(self) -> float:
        return self.decided_at - self.fault_at

    @property
    def dispatch_s(self) -> float:
        return self.first_print_at - self.decided_at

    @property
    def drain_s(self) -> float:
        return self.last_print_at - self.fault_at


# --------------------------------------------------------------------------- one venue


def coordinator_config() -> dict[str, Any]:
    return {"venue": "bench" + os.urandom(4).hex()}


def start_venue(root: Path, printers: int) -> LocalVenue:
    ids = tuple(f"printer-{chr(ord('a') + n)}" for n in range(printers))
    venue = LocalVenue(root, printer_ids=ids, extra_coordinator_config=coordinator_config())
    try:
        venue.start()
    except BaseException:
        stop_venue(venue)
        raise
    return venue


def queue_on_dead_printer(venue: LocalVenue, ref: str, count: int, tag: str) -> list[str]:
    venue.api("POST", f"/v1/printers/{DEAD}/pause", {})
    ids = []
    for n in range(count):
        answer = venue.submit(DEAD, f"{tag}-{n:04d}", ref, idempotency_key=f"bench-{tag}-{n}")
        ids.append(answer["job_id"])
    return ids


def decisions(venue: LocalVenue) -> list[dict[str, Any]]:
    """The automatic failover decisions for the failing printer, newest first."""
    every: list[dict[str, Any]] = venue.api("GET", "/v1/failovers")["items"]
    return [d for d in every if d["dead_printer_id"] == DEAD and d["decision_id"][:3] == "fo-"]


def measure(venue: LocalVenue, job_ids: list[str], fault: Callable[[], None],
            timeout_s: float) -> Run:  # fmt: skip
    """Cause the fault; wait until every queued badge is out; time it at the emulators."""
    decisions_before = len(decisions(venue))
    # Land the fault at a random moment of the 1 s heartbeat and probe cycles: a run
    # starts right after a heartbeat (the printer was just seen healthy again).
    time.sleep(random.uniform(0, 1))
    fault_at = time.time()
    fault()
    wanted = set(job_ids)

    def all_out() -> bool:
        return wanted <= {row["job_id"] for row in venue.printed_rows()}

    wait_until(all_out, timeout_s, "every queued badge to come out of a peer")
    wait_until(lambda: len(decisions(venue)) > decisions_before, 10, "the decision")
    decision = decisions(venue)[0]
    rows = [r for r in venue.printed_rows() if r["job_id"] in wanted]
    counts = collections.Counter(r["job_id"] for r in rows)
    return Run(
        fault_at=fault_at, decided_at=float(decision["decided_at"]),
        first_print_at=min(r["at"] for r in rows if r["printer_id"] != DEAD),
        last_print_at=max(r["at"] for r in rows), targets=dict(decision["targets"]),
        not_once={j: counts[j] for j in job_ids if counts[j] != 1},
    )  # fmt: skip


def bring_back(venue: LocalVenue, restart_agent: bool) -> None:
    if restart_agent:
        venue.start_agent(DEAD)
    else:
        venue.set_fault(DEAD, "none")
    wait_until(lambda: venue.printer_states().get(DEAD) == "healthy", 60, f"{DEAD} healthy")
    venue.api("POST", f"/v1/printers/{DEAD}/resume")


# --------------------------------------------------------------------------- series


def fault_of(venue: LocalVenue, kind: str) -> Callable[[], None]:
    if kind == "silent":
        return lambda: venue.kill_agent(DEAD)
    return lambda: venue.set_fault(DEAD, "jam")


def series(root: Path, kind: str, runs: int) -> list[Run]:
    venue = start_venue(root / kind, printers=3)
    try:
        ref = venue.upload_badge(sample_badge_pdf("B-0001", "Edsger Dijkstra", "Shortest Path"))
        results = []
        for n in range(runs):
            ids = queue_on_dead_printer(venue, ref, QUEUED_PER_RUN, f"{kind}{n}")
            results.append(measure(venue, ids, fault_of(venue, kind), timeout_s=60))
            report_run(kind, n, results[-1])
            bring_back(venue, restart_agent=kind == "silent")
        return results
    finally:
        stop_venue(venue)


def drain_series(root: Path, jobs: int, runs: int) -> list[Run]:
    venue = start_venue(root / "drain", printers=4)
    try:
        ref = venue.upload_badge(sample_badge_pdf("B-0002", "Barbara Liskov", "Liskov & Co"))
        results = []
        for n in range(runs):
            ids = queue_on_dead_printer(venue, ref, jobs, f"drain{n}")
            run = measure(venue, ids, lambda: venue.set_fault(DEAD, "jam"), timeout_s=300)
            results.append(run)
            report_run("drain", n, run)
            bring_back(venue, restart_agent=False)
        return results
    finally:
        stop_venue(venue)


# --------------------------------------------------------------------------- report


def report_run(kind: str, n: int, run: Run) -> None:
    problems = f"  NOT PRINTED ONCE: {run.not_once}" if run.not_once else ""
    print(f"  {kind:<7} run {n + 1}: failover {run.failover_s:5.2f} s (detection "
          f"{run.detection_s:5.2f} + dispatch {run.dispatch_s:4.2f}), all out after "
          f"{run.drain_s:6.2f} s, to {run.targets}{problems}", flush=True)  # fmt: skip


def summarise(title: str, values: list[float], target: float | None = None) -> None:
    ordered = sorted(values)
    verdict = ""
    if target is not None:
        met = "met" if statistics.median(values) <= target else "MISSED"
        verdict = f"   target <= {target} s: {met}"
    print(f"  {title:<42} median {statistics.median(values):5.2f} s   min {ordered[0]:5.2f}"
          f"   max {ordered[-1]:5.2f}   (n={len(values)}){verdict}")  # fmt: skip


def git_revision() -> str:
    try:
        out = subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty"],
                             capture_output=True, text=True, check=True)  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return out.stdout.strip()


def run_series(args: argparse.Namespace, root: Path) -> dict[str, list[Run]]:
    results: dict[str, list[Run]] = {}
    if "silent" in args.series:
        print(f"\nsilent death (SIGKILL of {DEAD}'s agent), {QUEUED_PER_RUN} badges queued a run:")
        results["silent"] = series(root, "silent", args.runs)
    if "jam" in args.series:
        print(f"\nreported jam ({DEAD}'s emulator jams), {QUEUED_PER_RUN} badges queued a run:")
        results["jam"] = series(root, "jam", args.runs)
    if "drain" in args.series:
        print(f"\ndrain: {args.drain_jobs} badges queued on {DEAD}, jammed; 3 peers take them:")
        results["drain"] = drain_series(root, args.drain_jobs, args.drain_runs)
    return results


def report(args: argparse.Namespace, results: dict[str, list[Run]]) -> None:
    print(f"\nsummary (load after: {os.getloadavg()[0]:.2f})")
    if silent := results.get("silent"):
        summarise("silent death: fault -> first drained badge", [r.failover_s for r in silent],
                  TARGET_SILENT_S)  # fmt: skip
        summarise("  of which detection (missed heartbeats)", [r.detection_s for r in silent])
    if jam := results.get("jam"):
        summarise("reported jam: fault -> first drained badge", [r.failover_s for r in jam],
                  TARGET_JAM_S)  # fmt: skip
        summarise("  of which detection (probe + heartbeat)", [r.detection_s for r in jam])
    if drain := results.get("drain"):
        jobs = args.drain_jobs
        summarise(f"drain {jobs}: fault -> first badge at a peer", [r.failover_s for r in drain])
        summarise(f"drain {jobs}: fault -> last badge out", [r.drain_s for r in drain])
        summarise(f"drain {jobs}: decision -> last badge out",
                  [r.last_print_at - r.decided_at for r in drain])  # fmt: skip
    bad = sum(1 for runs in results.values() for r in runs if r.not_once)
    print(f"  runs with a badge not printed exactly once: {bad}")


def run(args: argparse.Namespace, root: Path) -> None:
    print("bench_failover: fault -> first drained badge at a healthy emulator")
    print(f"code: {git_revision()}   python {platform.python_version()}   "
          f"cores: {os.cpu_count()}   load before: {os.getloadavg()[0]:.2f}")  # fmt: skip
    print("command: " + shlex.join([sys.executable, *sys.argv]))
    report(args, run_series(args, root))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=7, help="runs of each fault series")
    parser.add_argument("--drain-jobs", type=int, default=200, help="badges queued to drain")
    parser.add_argument("--drain-runs", type=int, default=3, help="runs of the drain series")
    parser.add_argument("--series", type=lambda v: v.split(","), default=list(SERIES),
                        help="comma-separated, of " + ",".join(SERIES))  # fmt: skip
    parser.add_argument("--keep", type=Path, help="work here and keep logs and badges")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    root = args.keep or Path(tempfile.mkdtemp(prefix="badgeline-bench-failover-"))
    try:
        run(args, root)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
