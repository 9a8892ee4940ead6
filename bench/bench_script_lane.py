"""CPU per script call: pooled connections against the pipelined lane.

    .venv/bin/python bench/bench_script_lane.py [--calls 40000] [--callers 50,1]
        [--rounds 3]

One Redis (EmbeddedRedis, AOF `always`, as shipped) and, in this process, the
coordinator's WaitingConnectionPool twice: with `pipeline_scripts=False` every
EVALSHA takes a pooled connection (the path before redis_lane.py), with the
default they share the pipelined lane. `--callers` coroutines call a small
script (an INCR, and a five-element reply like accept's) as fast as they can;
the two paths alternate, `--rounds` times for each number of callers.
Reported per path: calls/s, this process's CPU µs per call and Redis's CPU µs
per call (from /proc), median over rounds. A benchmark: it asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchkit import cpu_seconds
from redis.asyncio import Redis

from badgeline.coordinator.store.embedded import EmbeddedRedis
from badgeline.coordinator.store.pool import WaitingConnectionPool
from badgeline.coordinator.store.script_loader import LoadedScript

SCRIPT = "redis.call('INCR', KEYS[1]) return {1, ARGV[1], 'queued', 'printer-bench', 3}"
PATHS = {"pooled": False, "lane": True}


async def one_round(
    url: str, redis_pid: int, lane: bool, calls: int, callers: int
) -> dict[str, float]:
    pool = WaitingConnectionPool.from_url(url, timeout=5, pipeline_scripts=lane)
    client = Redis.from_pool(pool)
    script = LoadedScript("bench", 1, client.register_script(SCRIPT))
    per_caller = calls // callers
    job = "job_" + "0" * 16

    async def caller() -> None:
        for _ in range(per_caller):
            await script(["{bench}:lane"], [job, "x" * 30, 5, 7])

    try:
        await asyncio.gather(*(caller() for _ in range(callers)))  # warm: connections, script
        cpu, redis_cpu, wall = time.process_time(), cpu_seconds(redis_pid), time.perf_counter()
        await asyncio.gather(*(caller() for _ in range(callers)))
        wall = time.perf_counter() - wall
        cpu, redis_cpu = time.process_time() - cpu, cpu_seconds(redis_pid) - redis_cpu
    finally:
        await client.aclose()
    done = per_caller * callers
    return {"calls_s": done / wall, "client_us": 1e6 * cpu / done,
            "redis_us": 1e6 * redis_cpu / done}  # fmt: skip


async def run(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="badgeline-bench-lane-") as work:
        server = EmbeddedRedis(Path(work))
        server.start()
        assert server.process is not None
        try:
            for callers in args.callers:
                results: dict[str, list[dict[str, float]]] = {name: [] for name in PATHS}
                for _ in range(args.rounds):
                    for name, lane in PATHS.items():
                        results[name].append(await one_round(
                            server.url, server.process.pid, lane, args.calls, callers))  # fmt: skip
                print(f"{callers} concurrent callers, {args.calls} calls per round, "
                      f"median of {args.rounds} rounds:")  # fmt: skip
                for name, rounds in results.items():
                    medians = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
                    print(f"  {name:7} {medians['calls_s']:8.0f} calls/s  "
                          f"client {medians['client_us']:6.1f} µs/call  "
                          f"redis {medians['redis_us']:5.1f} µs/call")  # fmt: skip
        finally:
            server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=40_000)
    parser.add_argument("--callers", type=lambda s: [int(n) for n in s.split(",")],
                        default=[50, 1])  # fmt: skip
    parser.add_argument("--rounds", type=int, default=3)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
