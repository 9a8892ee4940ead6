"""Accept throughput with 1, 2, 3 coordinator replicas on one Redis, until something saturates.

    .venv/bin/python bench/bench_replicas.py [--replicas 1,2,3] [--requests 4000]
        [--rounds 3] [--kiosk-procs 2] [--concurrency 48] [--nice -10]

Coordinator replicas are stateless: every one of them serves any kiosk and any
agent from the same Redis. One Redis (EmbeddedRedis, AOF `always` as shipped) is
started; for each replica count, that many real coordinator processes
(benchkit's `Coordinator`, each with its own port and state directory) serve
`POST /v1/jobs` from `--kiosk-procs` load processes of their own (this file with
--kiosk-worker), whose `--concurrency` clients in all are spread round-robin over
the replicas and post distinct jobs as fast as answered (closed loop, benchkit's
`post_all`). Rounds alternate between replica counts.

Reported per replica count: median accepted jobs/s over rounds, p50/p99, the
speed-up over one replica, and the CPU (% of one core) used by Redis, the
coordinators together (and the busiest one), the load processes and everything
else on the machine, which says where it saturates: Redis is single-threaded (it
saturates at 100%), the machine at 200%.
A benchmark: it asserts nothing, and stops everything it started.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp
import benchkit
from benchkit import (
    Coordinator,
    cpu_seconds,
    git_revision,
    job_bodies,
    load_average,
    machine_busy_seconds,
    percentile,
    post_all,
    printer_ids,
)
from proccpu import priority

from badgeline.coordinator.store.embedded import EmbeddedRedis

BENCH_FILE = Path(__file__).resolve()
PRINTERS = printer_ids(16)


@dataclass
class RoundResult:
    replicas: int
    accepted: int
    errors: int
    wall_s: float
    p50_ms: float
    p99_ms: float
    cpu_pct: dict[str, float]

    @property
    def jobs_per_s(self) -> float:
        return self.accepted / self.wall_s


# --------------------------------------------------------------------------- load process


async def kiosk_worker(urls: list[str], count: int, concurrency: int, tag: str) -> None:
    """Post `count` jobs over `urls` with `concurrency` clients; print a JSON result."""
    benchkit.KIOSK_TOKEN = os.environ["BENCH_KIOSK_TOKEN"]  # the token the coordinators know
    bodies = job_bodies(count, PRINTERS, tag)
    shares = [bodies[n :: len(urls)] for n in range(len(urls))]
    per_url = max(1, concurrency // len(urls))
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        print("ready", flush=True)
        sys.stdin.readline()  # the parent says go when every load process is ready
        started, cpu_before = time.monotonic(), os.times()
        answers = await asyncio.gather(*(
            post_all(session, url + "/v1/jobs", share, per_url)
            for url, share in zip(urls, shares, strict=True)
        ))  # fmt: skip
        wall = time.monotonic() - started
        cpu_after = os.times()
    cpu = cpu_after.user + cpu_after.system - cpu_before.user - cpu_before.system
    statuses: Counter[int] = Counter()
    latencies: list[float] = []
    for counted, timed in answers:
        statuses.update(counted)
        latencies += timed
    result = {"statuses": statuses, "latencies": latencies, "wall": wall, "cpu": cpu}
    print(json.dumps(result), flush=True)


class LoadProcesses:
    def __init__(self, urls: list[str], args: argparse.Namespace, tag: str) -> None:
        env = {**os.environ, "BENCH_KIOSK_TOKEN": benchkit.KIOSK_TOKEN}
        share, procs = args.requests // args.kiosk_procs, args.kiosk_procs
        self.processes = [subprocess.Popen(
            [sys.executable, str(BENCH_FILE), "--kiosk-worker", "--urls", ",".join(urls),
             "--count", str(share), "--concurrency", str(args.concurrency // procs),
             "--tag", f"{tag}-{n}"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
        ) for n in range(procs)]  # fmt: skip
        for process in self.processes:
            assert process.stdout is not None
            if process.stdout.readline().strip() != "ready":
                raise RuntimeError("a kiosk load process failed to start")

    def go(self) -> None:
        for process in self.processes:
            assert process.stdin is not None
            process.stdin.write("go\n")
            process.stdin.flush()

    def results(self) -> tuple[Counter[int], list[float], float]:
        """Answers by status, latencies, and the CPU seconds the processes used."""
        statuses: Counter[int] = Counter()
        latencies: list[float] = []
        cpu = 0.0
        for process in self.processes:
            out, _ = process.communicate(timeout=600)
            result = json.loads(out.strip().splitlines()[-1])
            statuses.update({int(k): v for k, v in result["statuses"].items()})
            latencies += result["latencies"]
            cpu += result["cpu"]
        return statuses, latencies, cpu


# --------------------------------------------------------------------------- rounds


def cpu_now(coordinators: list[Coordinator], redis_pid: int) -> dict[str, float]:
    sample = {f"coordinator-{n + 1}": cpu_seconds(c.process.pid)
              for n, c in enumerate(coordinators) if c.process is not None}  # fmt: skip
    sample["redis"] = cpu_seconds(redis_pid)
    sample["machine"] = machine_busy_seconds()
    return sample


async def one_round(
    coordinators: list[Coordinator], redis_pid: int, args: argparse.Namespace, tag: str
) -> RoundResult:
    urls = [c.base_url for c in coordinators]
    load = await asyncio.to_thread(LoadProcesses, urls, args, tag)
    before, started = cpu_now(coordinators, redis_pid), time.monotonic()
    load.go()
    statuses, latencies, load_cpu = await asyncio.to_thread(load.results)
    wall = time.monotonic() - started
    after = cpu_now(coordinators, redis_pid)
    cpu = {name: 100 * (after[name] - before[name]) / wall for name in before}
    cpu["load"] = 100 * load_cpu / wall  # as the load processes measured it themselves
    cpu["coordinators"] = sum(v for k, v in cpu.items() if k.startswith("coordinator-"))
    cpu["others"] = max(0.0, cpu["machine"] - cpu["coordinators"] - cpu["redis"] - cpu["load"])
    return RoundResult(len(coordinators), statuses[201], sum(statuses.values()) - statuses[201],
                       wall, percentile(latencies, 50), percentile(latencies, 99), cpu)  # fmt: skip


def summarize(results: list[RoundResult], replicas: int, base: float | None) -> float:
    mine = [r for r in results if r.replicas == replicas]
    med = statistics.median
    rate = med(r.jobs_per_s for r in mine)
    cpu = {k: med(r.cpu_pct[k] for r in mine) for k in mine[0].cpu_pct}
    busiest = max(v for k, v in cpu.items() if k.startswith("coordinator-"))
    speedup = f"{rate / base:.2f}x" if base else "1.00x"
    print(f"{replicas:>8} {len(mine):>6} {rate:>8.0f} {speedup:>8}"
          f" {med(r.p50_ms for r in mine):>7.1f} {med(r.p99_ms for r in mine):>7.1f}"
          f" {sum(r.errors for r in mine):>7} {cpu['redis']:>6.0f}% {cpu['coordinators']:>7.0f}%"
          f" {busiest:>8.0f}% {cpu['load']:>6.0f}% {cpu['others']:>6.0f}%"
          f" {cpu['machine']:>7.0f}%")  # fmt: skip
    return rate


async def run(args: argparse.Namespace, work: Path) -> None:
    redis = EmbeddedRedis(work / "redis")
    coordinators = [Coordinator(work / f"replica-{n + 1}", "", PRINTERS)
                    for n in range(max(args.replicas))]  # fmt: skip
    results: list[RoundResult] = []
    try:
        await asyncio.to_thread(redis.start)
        assert redis.process is not None
        for coordinator in coordinators:
            coordinator.work_dir.mkdir(parents=True)
            coordinator.redis_url = redis.url
            await coordinator.start()
        print(f"{len(coordinators)} coordinators up on {redis.url}; warm-up", flush=True)
        await one_round(coordinators, redis.process.pid, _warmup(args), "warm")
        for number in range(args.rounds):
            for count in args.replicas:
                result = await one_round(coordinators[:count], redis.process.pid, args,
                                         f"r{number}-{count}")  # fmt: skip
                results.append(result)
                print(f"  round {number + 1}, {count} replica(s): {result.jobs_per_s:.0f} jobs/s,"
                      f" redis {result.cpu_pct['redis']:.0f}%, coordinators"
                      f" {result.cpu_pct['coordinators']:.0f}%", flush=True)  # fmt: skip
    finally:
        for coordinator in coordinators:
            coordinator.stop()
        await asyncio.to_thread(redis.stop)
    print(f"\nclosed loop, {args.concurrency} kiosk clients in {args.kiosk_procs} processes,"
          f" {args.requests} jobs per round; median over {args.rounds} rounds; CPU as % of one"
          " core (2 cores = 200%)")  # fmt: skip
    print(f"{'replicas':>8} {'rounds':>6} {'jobs/s':>8} {'speedup':>8} {'p50 ms':>7}"
          f" {'p99 ms':>7} {'errors':>7} {'redis':>7} {'coords':>8} {'busiest':>9}"
          f" {'load':>7} {'others':>7} {'machine':>8}")  # fmt: skip
    base = None
    for count in args.replicas:
        rate = summarize(results, count, base)
        base = base or rate


def _warmup(args: argparse.Namespace) -> argparse.Namespace:
    return argparse.Namespace(**{**vars(args), "requests": min(args.requests, 1000)})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--replicas", default="1,2,3")
    parser.add_argument("--requests", type=int, default=4000, help="jobs per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--kiosk-procs", type=int, default=2, help="load generator processes")
    parser.add_argument("--concurrency", type=int, default=48, help="kiosk clients in all")
    parser.add_argument(
        "--nice",
        type=int,
        default=0,
        help="niceness of the bench and all it starts (-10: ahead of other work)",
    )
    parser.add_argument("--kiosk-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--urls", help=argparse.SUPPRESS)
    parser.add_argument("--count", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--tag", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.kiosk_worker:
        asyncio.run(kiosk_worker(args.urls.split(","), args.count, args.concurrency, args.tag))
        return 0
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    args.replicas = [int(n) for n in args.replicas.split(",") if n]
    print("bench_replicas: accept throughput of 1..N coordinator replicas on one Redis")
    print(f"code: {git_revision()}")
    print("command: " + shlex.join([".venv/bin/python", "bench/bench_replicas.py", *sys.argv[1:]]))
    print(f"machine: {os.cpu_count()} cores shared by everything; load average {load_average()}")
    work = Path(tempfile.mkdtemp(prefix="badgeline-bench-replicas-"))
    try:
        with priority(args.nice) as said:
            print(f"priority: {said}", flush=True)
            asyncio.run(run(args, work))
    except KeyboardInterrupt:
        return 130
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"load average at the end: {load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
