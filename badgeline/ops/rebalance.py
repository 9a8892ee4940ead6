"""`badgeline rebalance`: move the excess of skewed queues to the least-loaded
healthy peers. Jobs keep their ids, idempotency keys and place in line
(docs/runbook.md, "A queue stalls", step 4: rebalance, don't flush)."""

from __future__ import annotations

import argparse
from typing import Any

from badgeline.ops.client import OpsClient
from badgeline.ops.command import add_common_options, execute
from badgeline.ops.tables import table


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common_options(parser)


def fetch(client: OpsClient, args: argparse.Namespace) -> Any:
    return client.post("/v1/rebalance")


def render(answer: Any, args: argparse.Namespace) -> str:
    moves = answer["moved"]
    if not moves:
        return "nothing to move: no queue is skewed against a healthy peer"
    counts: dict[tuple[str, str], int] = {}
    for move in moves:
        counts[(move["from"], move["to"])] = counts.get((move["from"], move["to"]), 0) + 1
    rows = [[source, target, n] for (source, target), n in sorted(counts.items())]
    return f"moved {len(moves)} job(s)\n" + table(["FROM", "TO", "JOBS"], rows)


def run(args: argparse.Namespace) -> int:
    return execute(args, fetch, render)
