"""Durability under kill -9, measured (prints figures, asserts nothing).

    .venv/bin/python bench/bench_durability.py                 # both parts
    .venv/bin/python bench/bench_durability.py --part redis --rounds 3
    .venv/bin/python bench/bench_durability.py --part agent --kills 100

redis: one coordinator on a Redis server this script owns, 32 kiosks submitting
as fast as they are answered. Each round measures accept throughput (jobs/s,
p50/p99) for `--measure` seconds, counts the server's fsync calls per accepted
job for two seconds (strace, if installed), then SIGKILLs the server under that
load, restarts it from its AOF and checks every job a kiosk was answered 201/200
for (present, same key, a repeat returns the same job). Rounds alternate
appendfsync `always` and `everysec` so both see the same machine.

agent: one printer, a steady flow of badges, and its agent process SIGKILLed
`--kills` times: most kills are aimed with strace at the agent's n-th fsync (a
SQLite commit or checkpoint of the journal), the rest land at random. After each
kill the journal must pass integrity_check, open without being moved aside and
have an outbox matching its rows; at the end it is checked against the printer's
ground truth and the coordinator's record (tests/chaos/harness/redis_kill.py, power_cuts.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.chaos.harness.power_cuts import KillCheck, PowerCuts  # noqa: E402
from tests.chaos.harness.redis_kill import redis_kill_round  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--part", choices=("redis", "agent", "all"), default="all")
    parser.add_argument("--rounds", type=int, default=3, help="redis: rounds per fsync mode")
    parser.add_argument("--concurrency", type=int, default=32, help="redis: kiosks")
    parser.add_argument("--measure", type=float, default=8.0, help="redis: seconds measured")
    parser.add_argument("--kills", type=int, default=100, help="agent: kill -9 count")
    parser.add_argument(
        "--aimed",
        type=float,
        default=0.8,
        help="agent: share of kills aimed at a journal fsync (needs strace)",
    )
    parser.add_argument("--seed", type=int, default=20261130, help="agent: kill plan seed")
    parser.add_argument("--out", type=Path, default=None, help="work directory")
    return parser.parse_args(argv)


async def redis_part(root: Path, rounds: int, concurrency: int, measure_s: float) -> bool:
    print(
        f"== kill -9 Redis under accept load: {rounds} rounds x (always, everysec), "
        f"{concurrency} kiosks, {measure_s:.0f} s measured per round",
        flush=True,
    )
    results: dict[str, list[dict[str, Any]]] = {"always": [], "everysec": []}
    for number in range(rounds):
        order = ("always", "everysec") if number % 2 == 0 else ("everysec", "always")
        for mode in order:
            _, figures = await redis_kill_round(
                root / f"redis-{number}-{mode}", mode, concurrency=concurrency,
                measure_s=measure_s, count_fsyncs=True,
            )  # fmt: skip
            results[mode].append(figures)
            print(f"round {number + 1} {json.dumps(figures)}", flush=True)
    ok = True
    for mode, rows in results.items():
        acknowledged = sum(r["acknowledged"] for r in rows)
        lost = sum(r["lost"] + r["keys_no_longer_claimed"] for r in rows)
        ok = ok and lost == 0
        print(f"summary {mode}: jobs/s median {statistics.median(r['jobs_per_s'] for r in rows)}"
              f" (rounds {[r['jobs_per_s'] for r in rows]}), p50 ms median "
              f"{statistics.median(r['p50_ms'] for r in rows)}, p99 ms median "
              f"{statistics.median(r['p99_ms'] for r in rows)}, fsyncs/accepted job "
              f"{[r['fsync_calls_per_accepted_job'] for r in rows]}; acknowledged {acknowledged},"
              f" lost after kill -9 + AOF restart {lost}")  # fmt: skip
    return ok


async def agent_part(root: Path, kills: int, aimed: float, seed: int) -> bool:
    print(f"== kill -9 the agent process {kills} times (aimed share {aimed}, seed {seed})",
          flush=True)  # fmt: skip

    def progress(check: KillCheck) -> None:
        state = {k: v for k, v in check.counts.items() if v}
        verdict = "ok" if not check.problems else f"PROBLEMS {check.problems}"
        print(f"kill {check.number:3d} {check.mode:13s} {check.detail:28s} exit "
              f"{check.exit_code} journal {state} {verdict}", flush=True)  # fmt: skip

    result = await PowerCuts(root / "agent-power-cuts", kills, seed=seed,
                             aimed_share=aimed).run(progress)  # fmt: skip
    figures = result.figures()
    print("summary agent: " + json.dumps({k: v for k, v in figures.items()
                                          if k != "checker_figures"}, default=str))  # fmt: skip
    print("chaos checker on the power-cut run: " + json.dumps(figures["checker_figures"]))
    if result.report is not None and not result.report.ok:
        print(result.report.text())
    return result.ok


async def main_async(args: argparse.Namespace) -> int:
    root = args.out or Path(tempfile.mkdtemp(prefix="badgeline-durability-"))
    print(f"work directory {root}")
    ok = True
    if args.part in ("redis", "all"):
        ok = await redis_part(root, args.rounds, args.concurrency, args.measure) and ok
    if args.part in ("agent", "all"):
        ok = await agent_part(root, args.kills, args.aimed, args.seed) and ok
    print("RESULT: " + ("no acknowledged job lost, every journal consistent" if ok
                        else "DURABILITY PROBLEM (see above)"))  # fmt: skip
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    return asyncio.run(main_async(parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
