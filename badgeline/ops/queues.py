"""`badgeline queues`: the depth of every printer's queue, flagged when it is
skewed (rebalance would move work off it), full, or stalled
(docs/runbook.md, "A queue stalls", steps 1 and 5)."""

from __future__ import annotations

import argparse
from typing import Any

from badgeline.ops.client import OpsClient
from badgeline.ops.command import add_common_options, execute
from badgeline.ops.tables import seconds, table


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common_options(parser)
    parser.add_argument("--stall-after", type=float, default=30.0, metavar="S",
                        help="a head job waiting this long is stalled (default: 30)")  # fmt: skip


def fetch(client: OpsClient, args: argparse.Namespace) -> Any:
    return client.get_all("/v1/queues", stall_after_s=args.stall_after)


def render(answer: Any, args: argparse.Namespace) -> str:
    queues = answer["items"]
    if not queues:
        return "no printers have reported yet"
    # LOAD: a bar of each depth against the deepest queue's (empty: `-`).
    widest = max(q["queue_depth"] for q in queues) or 1
    rows = [
        [q["printer_id"], q["queue_depth"], "#" * round(20 * q["queue_depth"] / widest),
         q["state"], q["paused"], not q["rejecting"], seconds(q["head_wait_s"]),
         " ".join(flag.upper() for flag in q["flags"]) or "ok"]
        for q in queues
    ]  # fmt: skip
    footer = (f"high-water mark {answer['high_water_mark']}; skewed = at least "
              f"{answer['skew_margin']} more than a healthy peer")  # fmt: skip
    headers = ["PRINTER", "DEPTH", "LOAD", "STATE", "PAUSED", "ACCEPTING", "HEAD-WAIT", "FLAGS"]
    return table(headers, rows) + "\n\n" + footer


def run(args: argparse.Namespace) -> int:
    return execute(args, fetch, render, flags={"stall_after_s": "--stall-after"})
