"""Schemathesis against a live coordinator, at least 10,000 cases.

    .venv/bin/python bench/bench_schemathesis.py [--cases 10000] [--per-operation 400]
        [--stateful-cases 3000] [--seed 1]

Starts one Redis (EmbeddedRedis) and the real coordinator in its own process
(`python -m badgeline.cli coordinator --config <toml>`), with the test tokens and
`lease_max_wait_s = 0` (a fuzzed long-poll answers at once), then runs the driver
of tests/security/fuzz.py over every operation of `/v1/openapi.json`, positive and
negative cases, in rounds with seeds `seed`, `seed + 1`, … until `--cases` cases
have been sent. Then the stateful driver (tests/security/fuzz_stateful.py) sends
`--stateful-cases` more in call sequences along the document's links (submit →
read / cancel / reprint / list, lease → start → ack, code → enrol), seeded from
`seed` too. Nothing stops at a failure: each is listed with a curl command that
reproduces it.

Checked per answer: no 5xx other than the documented 503s (queue_full,
no_printer_available), every 4xx/5xx in the documented error shape with a known
code, every documented 2xx body valid against its schema. At the end the
coordinator's log is searched for unhandled errors.

A benchmark, not a test: it prints figures (JSON) and asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

# Run from a checkout without installing: make `badgeline` and `tests` importable.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from badgeline.coordinator.store.embedded import EmbeddedRedis
from tests.security.conftest import running_coordinator
from tests.security.fuzz import FuzzReport, FuzzTarget, fuzz
from tests.security.fuzz_stateful import fuzz_stateful
from tests.security.test_schemathesis import FUZZ_SETTINGS, seed_jobs


def _merge(total: FuzzReport, part: FuzzReport) -> None:
    total.cases += part.cases
    total.by_status.update(part.by_status)
    total.by_operation.update(part.by_operation)
    total.error_codes.update(part.error_codes)
    total.failures += part.failures
    total.skipped = sorted(set(total.skipped) | set(part.skipped))
    total.seconds += part.seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=10_000, help="send at least this many")
    parser.add_argument(
        "--per-operation",
        type=int,
        default=400,
        help="hypothesis max_examples per operation and mode, per round",
    )
    parser.add_argument(
        "--stateful-cases",
        type=int,
        default=3000,
        help="then send at least this many in linked call sequences",
    )
    parser.add_argument(
        "--scenarios-per-run", type=int, default=40, help="call sequences per state machine run"
    )
    parser.add_argument("--steps", type=int, default=10, help="most calls per sequence")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="bench-schemathesis-"))
    redis = EmbeddedRedis(workdir / "redis", appendfsync="everysec")
    redis.start()
    total, rounds = FuzzReport(), 0
    started = time.monotonic()
    try:
        with running_coordinator(workdir, redis.url, "benchfuzz", **FUZZ_SETTINGS) as live:
            jobs = seed_jobs(live.url)
            while total.cases < args.cases:
                target = FuzzTarget(live.url, jobs, args.per_operation, seed=args.seed + rounds,
                                    stop_on_failure=False)  # fmt: skip
                _merge(total, fuzz(target))
                rounds += 1
                print(f"round {rounds}: {total.cases} cases, {len(total.failures)} failures",
                      file=sys.stderr, flush=True)  # fmt: skip
            stateful = FuzzTarget(live.url, jobs, 0, seed=args.seed, stop_on_failure=False)
            if args.stateful_cases > 0:
                fuzz_stateful(stateful, args.stateful_cases, args.scenarios_per_run, args.steps)
            print(
                f"stateful: {stateful.report.cases} cases, "
                f"{len(stateful.report.failures)} failures",
                file=sys.stderr,
                flush=True,
            )
            log = live.log()
    finally:
        redis.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    after = stateful.report
    figures = {
        "cases": total.cases + after.cases,
        "failures": len(total.failures) + len(after.failures),
        "by_status": dict(sorted((total.by_status + after.by_status).items())),
        "wall_s": round(time.monotonic() - started, 1),
        "unhandled_errors_in_log": log.count("unhandled error"),
        "tracebacks_in_log": log.count("Traceback"),
        "stateless": {
            **total.summary(),
            "rounds": rounds, "seeds": [args.seed, args.seed + rounds - 1],
            "per_operation_per_round": args.per_operation,
            "cases_by_operation": dict(sorted(total.by_operation.items())),
        },
        "stateful": {
            **after.summary(),
            "seed": args.seed, "scenarios_per_run": args.scenarios_per_run, "steps": args.steps,
            "answers": dict(sorted(after.by_answer.items())),
        },
    }  # fmt: skip
    print(json.dumps(figures, indent=2))
    for failure in (total.failures + after.failures)[:50]:
        print(failure)
    return 0


if __name__ == "__main__":
    sys.exit(main())
