"""`badgeline dlq list` and `badgeline dlq redrive [IDS …]`: jobs shed by
backpressure or failed too often, and putting them back in line through the
same dedupe gate as a new job, so a redrive can never print a badge twice."""

from __future__ import annotations

import argparse
from typing import Any

from badgeline.ops.client import EXIT_REFUSED, OpsClient
from badgeline.ops.command import add_common_options, execute
from badgeline.ops.tables import clock, table


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    add_common_options(actions.add_parser("list", help="list dead-lettered jobs"))
    redrive = actions.add_parser("redrive", help="put dead letters back in line")
    add_common_options(redrive)
    redrive.add_argument("ids", nargs="*", metavar="JOB", help="only these jobs (default: all)")


def fetch(client: OpsClient, args: argparse.Namespace) -> Any:
    if args.action == "list":
        return client.get_all("/v1/dead-letters")
    return client.post("/v1/dead-letters/redrive", {"ids": args.ids} if args.ids else {})


def render(answer: Any, args: argparse.Namespace) -> str:
    if args.action == "list":
        rows = [[d["job_id"], d["printer_id"], clock(d["dead_lettered_at"]), d["reason"]]
                for d in answer["items"]]  # fmt: skip
        return table(["JOB", "PRINTER", "AT-UTC", "REASON"], rows) if rows else "no dead letters"
    rows = [[r["job_id"], r["outcome"], r["detail"]] for r in answer["results"]]
    return table(["JOB", "OUTCOME", "DETAIL"], rows) if rows else "nothing to redrive"


# What the operator asked for did not happen: the job is still waiting in the
# dead letters (its queue is full), it failed for good (its badge cannot print:
# `refused`), or the id named no dead letter (a typo, or it was redriven
# already). `suppressed` is the gate doing its job: not a failure.
NOT_REDRIVEN = frozenset({"still_shed", "refused", "not_dead_lettered"})


def verdict(answer: Any, args: argparse.Namespace) -> int:
    if args.action != "redrive":
        return 0
    return EXIT_REFUSED if any(r["outcome"] in NOT_REDRIVEN for r in answer["results"]) else 0


def run(args: argparse.Namespace) -> int:
    return execute(args, fetch, render, verdict, flags={"ids": "JOB"})
