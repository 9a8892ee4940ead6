"""One coordinator process, hundreds of printers: accept p99 and the cost of heartbeats.

    .venv/bin/python bench/bench_scale.py [--printers 50,100,200,300,400,500]
        [--targets coordinator,bare] [--step-seconds 10] [--agent-procs 2] [--kiosks 64]
        [--beat-seconds 10] [--redis-max-connections N] [--nice -10] [--json results.json]

One Redis (EmbeddedRedis, AOF `always`, as shipped) and one real coordinator
process (benchkit's `Coordinator`: an agent token per printer, a kiosk token).
With `--targets coordinator,bare` a second server process is measured the same
way in the same run, beside it: scale_bare.py's bare reference (the same paths
and tokens; each request only authenticated, validated with the real protocol
model and one EVALSHA of a no-op script; leases park on an in-process queue fed
by the submits). Its row says what this machine can do for the request mix with
no business logic at all. Each printer count is measured for every target before
the next count, the order alternating (A B, B A, ...) so drifting load on a
shared machine falls on both.
Simulated agents (bench/simagents.py: real HTTP agent protocol, heartbeat every
1 s, lease long-poll, start, ack) run in `--agent-procs` processes of their own;
the kiosk load (benchkit's `post_paced`: open loop, latency from each job's
due time) runs in this process. Nothing of the load shares the coordinator's GIL.

1. Heartbeat cost, with the largest printer count: a window with every agent
   long-polling but not heartbeating, then one with heartbeats every 1 s; the
   coordinator's (and Redis's) extra CPU seconds per 1,000 heartbeats.
2. Steps: for each printer count N, N agents heartbeat and print, and the kiosks
   offer N jobs/s (1 job/s per printer, round-robin over the printers) for
   `--step-seconds`: accept p50/p99, accepted and acked jobs/s, and the CPU each
   part used. The report names the largest count served at accept p99 <= 50 ms,
   per server: a figure to report, not a target to reach.

Figures (docs/benchmarks.md, "printers the bare reference serves"): at 72e763b,
quiet, `--printers 150,200,250,300,500 --targets bare,coordinator --nice -10`: the
bare reference met p99 <= 50 ms up to 250 printers, the coordinator up to 150; at
500 both are seconds behind, the 2 cores saturated (the load generators alone
take about one).

The machine has 2 cores shared by everything here (and by other users: the
machine's CPU use outside these processes is printed per step). A benchmark: it
asserts nothing, and stops all it started.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp
from benchkit import (
    KIOSK_TOKEN,
    Coordinator,
    cpu_seconds,
    git_revision,
    job_bodies,
    load_average,
    machine_busy_seconds,
    percentile,
    post_paced,
    printer_ids,
)
from proccpu import priority
from scale_bare import BareVenue

from badgeline.coordinator.store.embedded import EmbeddedRedis

BENCH = Path(__file__).resolve().parent
P99_TARGET_MS = 50.0
WARMUP_S = 2.0  # agents heartbeat and long-poll this long before the kiosks start
DRAIN_S = 3.0  # and keep printing this long after the last job is offered
TARGETS = ("coordinator", "bare")


@dataclass
class Window:
    """CPU seconds by part over one timed window."""

    wall_s: float = 0.0
    cpu_s: dict[str, float] = field(default_factory=dict)
    began: float = 0.0  # Unix time: heartbeats are counted by their send time
    ended: float = 0.0

    def inside(self, beats: list[tuple[float, float]]) -> list[float]:
        """Round-trip ms of the heartbeats sent inside this window."""
        return [ms for sent, ms in beats if self.began <= sent < self.ended]

    def pct(self, name: str) -> float:
        return 100 * self.cpu_s.get(name, 0.0) / self.wall_s if self.wall_s else 0.0


@dataclass
class Step:
    target: str
    printers: int
    offered_per_s: float
    accepted_per_s: float
    non_201: int
    p50_ms: float
    p99_ms: float
    acked: int
    accepted: int
    heartbeats_per_s: float
    heartbeat_p99_ms: float
    cpu_pct: dict[str, float]
    server_ms_per_job: float  # the server's CPU over the step / jobs acked, heartbeats included


class Meter:
    """CPU of the server under test, Redis, the agent processes, this process and the rest."""

    def __init__(self, server_pid: int, redis_pid: int) -> None:
        self.pids = {"server": server_pid, "redis": redis_pid}
        self.agent_pids: list[int] = []

    def watch(self, target: str, servers: dict[str, int]) -> None:
        """Measure `target`; the other server, idle meanwhile, is metered apart ("idle"):
        the coordinator's background work must not pass for other users' noise."""
        self.pids = {"server": servers[target], "redis": self.pids["redis"]}
        for name, pid in servers.items():
            if name != target:
                self.pids["idle"] = pid

    def sample(self) -> dict[str, float]:
        now = {"unix": time.time()}
        now |= {name: cpu_seconds(pid) for name, pid in self.pids.items()}
        now["agents"] = sum(cpu_seconds(pid) for pid in self.agent_pids)
        own = os.times()  # this process: the kiosk load generator
        now["kiosks"] = own.user + own.system
        now["machine"] = machine_busy_seconds()
        return now

    @staticmethod
    def window(before: dict[str, float], after: dict[str, float], wall_s: float) -> Window:
        cpu = {name: after[name] - before[name] for name in before if name != "unix"}
        ours = sum(v for k, v in cpu.items() if k != "machine")
        cpu["others"] = max(0.0, cpu["machine"] - ours)
        return Window(wall_s, cpu, before["unix"], after["unix"])


class AgentFleet:
    """`count` simulated agents spread over `procs` processes, for `seconds`."""

    def __init__(self, url: str, count: int, procs: int, seconds: float, *flags: str) -> None:
        share = -(-count // procs)
        self.processes = []
        for first in range(0, count, share):
            command = [sys.executable, str(BENCH / "simagents.py"), "--url", url,
                       "--first", str(first), "--count", str(min(share, count - first)),
                       "--seconds", str(seconds), *flags]  # fmt: skip
            self.processes.append(subprocess.Popen(command, stdout=subprocess.PIPE, text=True))

    async def ready(self) -> None:
        """Wait until every process has its agents set up (their clocks then start)."""
        for process in self.processes:
            assert process.stdout is not None
            line = await asyncio.to_thread(process.stdout.readline)
            if line.strip() != "ready":
                raise RuntimeError(f"simulated agents failed to start: {line!r}")

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.processes]

    async def results(self) -> tuple[Counter[str], list[tuple[float, float]]]:
        """Counts by request and status; each heartbeat's (Unix send time, round-trip ms)."""
        counts: Counter[str] = Counter()
        beats: list[tuple[float, float]] = []
        for process in self.processes:
            out, _ = await asyncio.to_thread(process.communicate)
            line = out.strip().splitlines()[-1] if out.strip() else "{}"
            result = json.loads(line)
            counts.update(result.get("counts", {}))
            beats += [tuple(beat) for beat in result.get("heartbeats", [])]
        return counts, beats

    def kill(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.kill()
                process.wait()


async def heartbeat_cost(url: str, meter: Meter, args: argparse.Namespace) -> dict[str, float]:
    """Extra server and Redis CPU per 1,000 heartbeats, largest fleet, no jobs."""
    count, seconds = max(args.printers), args.beat_seconds
    windows: dict[str, Window] = {}
    per_s = 0.0
    for label, flags in (("no heartbeats", ["--no-heartbeat"]), ("heartbeats", [])):
        fleet = AgentFleet(url, count, args.agent_procs, seconds + 2 * WARMUP_S, *flags)
        meter.agent_pids = fleet.pids
        try:
            await fleet.ready()
            await asyncio.sleep(WARMUP_S)
            before, started = meter.sample(), time.monotonic()
            await asyncio.sleep(seconds)
            windows[label] = meter.window(before, meter.sample(), time.monotonic() - started)
            _, beats = await fleet.results()
        finally:
            fleet.kill()
        per_s = max(per_s, len(windows[label].inside(beats)) / windows[label].wall_s)
        print(f"  {count} agents, {label}: server {windows[label].pct('server'):.0f}%"
              f" of a core, redis {windows[label].pct('redis'):.0f}%, others"
              f" {windows[label].pct('others'):.0f}%", flush=True)  # fmt: skip
    with_beats, without = windows["heartbeats"], windows["no heartbeats"]
    cost = {}
    for part in ("server", "redis"):
        extra = with_beats.cpu_s[part] / with_beats.wall_s - without.cpu_s[part] / without.wall_s
        cost[part] = 1000 * extra / per_s if per_s else float("nan")
    print(f"  {per_s:.0f} heartbeats/s: server {cost['server']:.2f} CPU s per 1,000"
          f" heartbeats, redis {cost['redis']:.2f}", flush=True)  # fmt: skip
    return {"heartbeats_per_s": per_s, **{f"{k}_cpu_s_per_1000": v for k, v in cost.items()}}


async def run_step(
    target: str, url: str, meter: Meter, printers: int, args: argparse.Namespace
) -> Step:
    rate = printers * args.jobs_per_printer_s
    bodies = job_bodies(round(rate * args.step_seconds), printer_ids(printers),
                        f"scale{printers}-{time.monotonic_ns()}")  # fmt: skip
    fleet = AgentFleet(url, printers, args.agent_procs, WARMUP_S + args.step_seconds + DRAIN_S,
                       "--print-ms", str(args.print_ms))  # fmt: skip
    meter.agent_pids = fleet.pids
    try:
        await fleet.ready()
        await asyncio.sleep(WARMUP_S)
        connector = aiohttp.TCPConnector(limit=args.kiosks)
        async with aiohttp.ClientSession(connector=connector) as session:
            before, started = meter.sample(), time.monotonic()
            statuses, latencies = await post_paced(
                session, url + "/v1/jobs", bodies, args.kiosks, rate
            )
            wall = time.monotonic() - started
            window = meter.window(before, meter.sample(), wall)
        counts, beats = await fleet.results()
    finally:
        fleet.kill()
    beats_ms = window.inside(beats)
    refused = {status: n for status, n in statuses.items() if status != 201}
    if refused or any(k.split()[-1] not in ("200", "201") for k in counts):
        print(f"  {target}, {printers} printers: kiosk answers {dict(statuses)},"
              f" agents {dict(counts)}")  # fmt: skip
    return Step(target, printers, rate, statuses[201] / wall, sum(refused.values()),
                percentile(latencies, 50), percentile(latencies, 99), counts["ack 200"],
                statuses[201], len(beats_ms) / wall, percentile(beats_ms, 99) if beats_ms else 0,
                {name: window.pct(name) for name in window.cpu_s},
                1000 * window.cpu_s["server"] / max(1, counts["ack 200"]))  # fmt: skip


def met(step: Step) -> bool:
    return step.p99_ms <= P99_TARGET_MS and not step.non_201


def print_step(step: Step) -> None:
    cpu = step.cpu_pct
    print(f"{step.target:<12} {step.printers:>8} {step.offered_per_s:>8.0f}"
          f" {step.accepted_per_s:>8.0f} {step.non_201:>7} {step.p50_ms:>7.1f}"
          f" {step.p99_ms:>7.1f} {'met' if met(step) else 'MISSED':>6}"
          f" {step.acked:>6}/{step.accepted:<6} {step.heartbeats_per_s:>6.0f}"
          f" {step.heartbeat_p99_ms:>7.1f} {cpu['server']:>6.0f}% {cpu['redis']:>5.0f}%"
          f" {cpu['agents']:>6.0f}% {cpu['kiosks']:>6.0f}% {cpu.get('idle', 0):>4.0f}%"
          f" {cpu['others']:>6.0f}% {step.server_ms_per_job:>8.2f}",
          flush=True)  # fmt: skip


STEP_HEADER = (f"{'server':<12} {'printers':>8} {'offered':>8} {'jobs/s':>8} {'non-201':>7}"
               f" {'p50 ms':>7} {'p99 ms':>7} {'target':>6} {'acked/accepted':>13} {'hb/s':>6}"
               f" {'hb p99':>7} {'server':>7} {'redis':>6} {'agents':>7} {'kiosks':>7}"
               f" {'idle':>5} {'others':>7} {'ms/job':>8}")  # fmt: skip


def print_summary(steps: list[Step], targets: list[str]) -> dict[str, int | None]:
    largest: dict[str, int | None] = {}
    for target in targets:
        counts = [s.printers for s in steps if s.target == target and met(s)]
        largest[target] = max(counts) if counts else None
        print(f"{target}: largest printer count with accept p99 <= {P99_TARGET_MS:.0f} ms: "
              f"{largest[target] or 'none'}")  # fmt: skip
    if {"coordinator", "bare"} <= set(targets):
        pairs = []
        for printers in dict.fromkeys(s.printers for s in steps):
            mine = {s.target: s for s in steps if s.printers == printers}
            if "coordinator" in mine and "bare" in mine:
                ratio = mine["coordinator"].server_ms_per_job / mine["bare"].server_ms_per_job
                pairs.append(f"{printers}: {ratio:.2f}x")
        print("server CPU per job's life, coordinator / bare, same count: " + ", ".join(pairs))
    return largest


async def start_servers(
    args: argparse.Namespace, work: Path, redis: EmbeddedRedis
) -> tuple[Coordinator, BareVenue]:
    coordinator = Coordinator(work, "", printer_ids(max(args.printers)))
    bare = BareVenue(work, redis.url, KIOSK_TOKEN, max(args.printers))
    if "coordinator" in args.targets:
        # redis-py's pool holds at most 100 connections unless the URL says otherwise;
        # more requests waiting on Redis at once fail with "Too many connections".
        pool = (
            f"?max_connections={args.redis_max_connections}" if args.redis_max_connections else ""
        )
        coordinator.redis_url = redis.url + pool
        await coordinator.start()
    if "bare" in args.targets:
        await bare.start()
    return coordinator, bare


async def run(args: argparse.Namespace, work: Path) -> dict[str, object]:
    redis = EmbeddedRedis(work / "redis", appendfsync=args.fsync)
    results: dict[str, object] = {"code": git_revision(), "command": args.command}
    coordinator: Coordinator | None = None
    bare: BareVenue | None = None
    try:
        await asyncio.to_thread(redis.start)
        coordinator, bare = await start_servers(args, work, redis)
        assert redis.process is not None
        servers: dict[str, Coordinator | BareVenue] = {"coordinator": coordinator, "bare": bare}
        urls = {t: servers[t].base_url for t in args.targets}
        pids = {t: servers[t].process.pid for t in args.targets}  # type: ignore[union-attr]
        meter = Meter(0, redis.process.pid)
        costs: dict[str, dict[str, float]] = {}
        for target in args.targets:
            print(f"heartbeat cost, {target} (no jobs):", flush=True)
            meter.watch(target, pids)
            costs[target] = await heartbeat_cost(urls[target], meter, args)
        results["heartbeat_cost"] = costs
        print(f"\nsteps of {args.step_seconds:.0f} s, {args.jobs_per_printer_s:g} job/s per"
              f" printer offered by {args.kiosks} kiosk clients (open loop); CPU as % of one"
              " core during the step (2 cores = 200%; idle: the other server, not under load);"
              " ms/job: the server's CPU over the step per job acked (accept, lease, start,"
              " ack, heartbeats)")  # fmt: skip
        print(STEP_HEADER)
        steps: list[Step] = []
        running = list(args.targets)
        for index, printers in enumerate(args.printers):
            # A B, then B A: a load drifting over the run weighs on both targets alike.
            for target in running if index % 2 == 0 else running[::-1]:
                meter.watch(target, pids)
                steps.append(await run_step(target, urls[target], meter, printers, args))
                print_step(steps[-1])
            for target in list(running):
                mine = [s for s in steps if s.target == target]
                if sum(s.p99_ms > 4 * P99_TARGET_MS for s in mine[-2:]) == 2:
                    print(f"({target}: two steps far over the target in a row: stopping it)")
                    running.remove(target)
            if not running:
                break
        results["steps"] = [asdict(s) for s in steps]
        print()
        results["largest_meeting_target"] = print_summary(steps, args.targets)
    finally:
        for server in (coordinator, bare):
            if server is not None:
                server.stop()
        await asyncio.to_thread(redis.stop)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--printers", default="25,50,100,200,300,400,500",
                        help="printer counts, one step each")  # fmt: skip
    parser.add_argument("--targets", default="coordinator",
                        help="servers to measure, comma-separated: coordinator, bare (the"
                        " reference with no business logic, bench/scale_bare.py)")  # fmt: skip
    parser.add_argument("--step-seconds", type=float, default=10)
    parser.add_argument("--jobs-per-printer-s", type=float, default=1.0)
    parser.add_argument("--agent-procs", type=int, default=2)
    parser.add_argument("--kiosks", type=int, default=64, help="concurrent kiosk clients")
    parser.add_argument("--print-ms", type=float, default=20, help="simulated print time")
    parser.add_argument("--beat-seconds", type=float, default=10, help="heartbeat cost window")
    parser.add_argument("--redis-max-connections", type=int, default=0,
                        help="add ?max_connections=N to the coordinator's redis_url"
                        " (0 = as shipped: redis-py's default pool of 100)")  # fmt: skip
    parser.add_argument(
        "--fsync",
        choices=["always", "everysec"],
        default="always",
        help="Redis appendfsync policy (always: as the coordinator ships)",
    )
    parser.add_argument("--nice", type=int, default=0,
                        help="run the bench and all it starts at this niceness (-10: ahead of"
                        " other work on a shared machine; needs root)")  # fmt: skip
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    parser.add_argument("--keep", type=Path, help="keep the coordinator's log and state in DIR")
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    args.printers = [int(n) for n in args.printers.split(",") if n]
    args.targets = [t for t in args.targets.split(",") if t]
    if not args.targets or set(args.targets) - set(TARGETS):
        parser.error(f"--targets: choose from {', '.join(TARGETS)}")
    args.command = shlex.join([".venv/bin/python", "bench/bench_scale.py", *sys.argv[1:]])
    print("bench_scale: one coordinator, simulated agents, kiosks at 1 job/s per printer")
    print(f"code: {git_revision()}\ncommand: {args.command}")
    print(f"machine: 2 cores shared by everything; load average {load_average()}")
    work = args.keep or Path(tempfile.mkdtemp(prefix="badgeline-bench-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        with priority(args.nice) as said:
            print(f"priority: {said}", flush=True)
            results = asyncio.run(run(args, work))
    except KeyboardInterrupt:
        return 130
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    results["load_average_end"] = load_average()
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
        print(f"figures written to {args.json}")
    print(f"load average at the end: {load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
