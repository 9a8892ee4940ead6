"""`badgeline cancel JOB …` and `badgeline cancel --printer P --all` (as lp's cancel):
cancel jobs that have not started printing. With --all, every job of the printer
that no printer has started: queued, or leased by its agent and not yet started;
the job it is printing finishes. Each canceled job keeps its history."""

from __future__ import annotations

import argparse
from typing import Any

from badgeline.ops.client import EXIT_REFUSED, EXIT_UNREACHABLE, EXIT_USAGE, OpsClient, OpsError
from badgeline.ops.command import (
    add_common_options,
    add_force_option,
    execute,
    job_id,
    printer_id,
    require_known_printers,
)
from badgeline.ops.tables import table


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common_options(parser)
    add_force_option(parser)
    parser.add_argument("jobs", nargs="*", type=job_id, metavar="JOB", help="the jobs to cancel")
    parser.add_argument("--printer", type=printer_id, metavar="P",
                        help="with --all: the printer whose waiting jobs to cancel")  # fmt: skip
    parser.add_argument("--all", action="store_true",
                        help="every job of --printer that has not started")  # fmt: skip


def _check_usage(args: argparse.Namespace) -> None:
    if args.jobs and (args.all or args.printer):
        raise OpsError("name jobs, or --printer P --all, not both", EXIT_USAGE)
    if args.all != bool(args.printer):
        raise OpsError("--all and --printer P go together: --printer P --all cancels "
                       "every job of P that has not started", EXIT_USAGE)  # fmt: skip
    if not args.jobs and not args.all:
        raise OpsError("name the jobs to cancel (JOB …), or --printer P --all", EXIT_USAGE)


def fetch(client: OpsClient, args: argparse.Namespace) -> Any:
    _check_usage(args)
    if args.all:
        # A typo would cancel nothing and say so, while the intended queue prints on.
        require_known_printers(client, args, args.printer)
        return client.post(f"/v1/queues/{args.printer}/cancel")
    results = []
    for job in args.jobs:
        try:
            answer = client.post(f"/v1/jobs/{job}/cancel")
            results.append({"job_id": job, "outcome": answer["state"], "detail": None})
        except OpsError as refused:
            if refused.exit_code == EXIT_UNREACHABLE:
                raise
            results.append({"job_id": job, "outcome": "refused", "detail": str(refused)})
    return {"results": results}


def render(answer: Any, args: argparse.Namespace) -> str:
    if args.all:
        canceled = answer["canceled"]
        head = f"canceled {len(canceled)} job(s) of {answer['printer_id']} that had not started"
        return "\n".join([head, *canceled])
    rows = [[r["job_id"], r["outcome"], r["detail"]] for r in answer["results"]]
    return table(["JOB", "OUTCOME", "DETAIL"], rows)


def verdict(answer: Any, args: argparse.Namespace) -> int:
    if args.all:
        return 0
    return EXIT_REFUSED if any(r["outcome"] != "canceled" for r in answer["results"]) else 0


def run(args: argparse.Namespace) -> int:
    return execute(args, fetch, render, verdict, flags={"printer_id": "--printer"})
