"""`badgeline failovers [--printer P]`: the failover decisions, newest first:
what moved where, what was parked, and how the in-flight job was resolved.
With --printer it also shows that printer's queue now, which must be empty
after a drain (docs/runbook.md, "A printer drops mid-rush", step 2)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from badgeline.ops.client import PAGE_LIMIT, OpsClient
from badgeline.ops.command import (
    add_common_options,
    execute,
    printer_id,
    require_known_printers,
)
from badgeline.ops.tables import clock, table


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common_options(parser)
    parser.add_argument("--printer", type=printer_id, help="only decisions about this printer")
    parser.add_argument("--limit", type=int, default=20,
                        help="decisions to show, newest first (default: %(default)s)")  # fmt: skip


def fetch(client: OpsClient, args: argparse.Namespace) -> Any:
    if args.printer is not None:  # a typo would read "no decisions, queue now 0": all fine
        require_known_printers(client, args, args.printer)
    if args.printer is None:
        return {"items": _newest(client, args.limit, lambda d: True), "next": None}
    mine = _newest(client, args.limit, lambda d: d["dead_printer_id"] == args.printer)
    depth = client.get(f"/v1/queues/{args.printer}", limit=1)["depth"]
    return {"items": mine, "next": None, "printer_id": args.printer, "queue_depth": depth}


def _newest(client: OpsClient, count: int, wanted: Callable[[dict[str, Any]], bool]) -> list[Any]:
    """The `count` newest decisions `wanted` takes, reading pages until it has them."""
    found: list[Any] = []
    page: dict[str, Any] = {"next": None}
    while len(found) < count:
        page = client.get("/v1/failovers", limit=PAGE_LIMIT, after=page["next"])
        found += [decision for decision in page["items"] if wanted(decision)]
        if not page["next"]:
            break
    return found[:count]


def _targets(decision: dict[str, Any]) -> str:
    return ",".join(f"{p}:{n}" for p, n in sorted((decision.get("targets") or {}).items()))


def _inflight(decision: dict[str, Any]) -> str:
    resolution = decision.get("inflight_resolution") or {}
    return ",".join(f"{j}:{resolution.get(j, 'pending')}" for j in decision["inflight_job_ids"])


def render_decisions(decisions: list[dict[str, Any]]) -> str:
    rows = [
        [d["decision_id"], d["dead_printer_id"], clock(d["decided_at"]),
         len(d["drained_job_ids"]), len(d["parked_job_ids"]), _targets(d), _inflight(d),
         d["reason"]]
        for d in decisions
    ]  # fmt: skip
    if not rows:
        return "no failover decisions"
    headers = ["DECISION", "PRINTER", "AT-UTC", "MOVED", "PARKED", "TO", "IN-FLIGHT", "REASON"]
    return table(headers, rows)


def render(answer: Any, args: argparse.Namespace) -> str:
    text = render_decisions(answer["items"])
    if "queue_depth" in answer:
        text += f"\n{answer['printer_id']} queue now: {answer['queue_depth']} job(s)"
    return text


def run(args: argparse.Namespace) -> int:
    return execute(args, fetch, render, flags={"limit": "--limit"})
