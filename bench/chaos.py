"""Chaos soak: a venue of real processes under a seeded fault schedule, then reconciliation.

    .venv/bin/python bench/chaos.py --seed 7 --jobs 5000 --agents 8

Starts one Redis (AOF, appendfsync always), two coordinator replicas on it, one
printer emulator and one agent per printer (agents split over the replicas, each
behind a TCP fault proxy), and kiosks that submit `--jobs` badges over the fault
window with retries under one idempotency key per job. The fault schedule is drawn
from `--seed`: kill -9 agents, a coordinator replica and Redis (each restarted),
cut agent links, jam printers, run them out of paper, take them offline, slow them.
Then every fault is cleared, the venue settles, and the checker prints the report
(see tests/chaos/harness/checker.py). The full record is in <out>/chaos-report.json.

Prints figures; asserts nothing. Exit status 0 when every invariant held, 1 if not.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import random
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.chaos.harness.run import ChaosConfig, run_chaos  # noqa: E402
from tests.chaos.harness.schedule import mix_for  # noqa: E402

JOBS_PER_SECOND = 15.0  # what the window is sized for: the venue keeps up with the kiosks
SECONDS_PER_FAULT = 4.0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=None, help="fault/jobs seed (random if unset)")
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--agents", type=int, default=8, help="printers, one agent each (≤ 26)")
    parser.add_argument("--kiosks", type=int, default=12)
    parser.add_argument(
        "--duration",
        type=float,
        default=None,
        help="fault window in seconds (default: jobs / 15, at least 40)",
    )
    parser.add_argument(
        "--faults", type=int, default=None, help="faults in the window (default: one per 4 s)"
    )
    parser.add_argument("--settle-timeout", type=float, default=300.0)
    parser.add_argument(
        "--slow-with-faults", action="store_true",
        help="let a slowed printer also jam, run out of paper or go offline (the agent tells"
        " a slow printer from a silent one: badges a fault clears from its buffer are"
        " reprinted, flagged possible_duplicate; docs/reliability.md, Known losses)",
    )  # fmt: skip
    parser.add_argument(
        "--out", type=Path, default=None, help="run directory (default: a temp dir)"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log each fault as it strikes")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 10**6)
    duration = args.duration or max(40.0, args.jobs / JOBS_PER_SECOND)
    faults = args.faults
    if faults is None:
        faults = max(10, round(duration / SECONDS_PER_FAULT))
    root = args.out or Path(tempfile.mkdtemp(prefix=f"badgeline-chaos-{seed}-"))
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(message)s")
    if args.verbose:
        logging.getLogger("badgeline.chaos").setLevel(logging.INFO)
    config = ChaosConfig(
        root=root, seed=seed, jobs=args.jobs, agents=args.agents, kiosks=args.kiosks,
        duration_s=duration, mix=mix_for(faults, random.Random(seed)),
        settle_timeout_s=args.settle_timeout, slow_with_faults=args.slow_with_faults,
    )  # fmt: skip
    print(f"chaos: seed {seed}, {args.jobs} jobs, {args.agents} agents, {faults} faults over "
          f"{duration:.0f} s; run directory {root}", flush=True)  # fmt: skip
    result = asyncio.run(run_chaos(config))
    print(result.text())
    print(f"full record: {root / 'chaos-report.json'}")
    print("RESULT: " + ("every invariant held" if result.ok else "INVARIANT VIOLATED"))
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
