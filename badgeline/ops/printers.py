"""`badgeline printers`: is each printer alive, and is it actually printing?

Health comes from the agents' heartbeats; liveness from the queue itself: a
printer whose head job has waited past --stall-after behind fresh heartbeats
is a zombie (docs/runbook.md, "A queue stalls", step 3), to be drained rather than
cleared."""

from __future__ import annotations

import argparse
from typing import Any

from badgeline.ops.client import OpsClient
from badgeline.ops.command import add_common_options, execute
from badgeline.ops.tables import cell, seconds, table


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common_options(parser)
    parser.add_argument("--stall-after", type=float, default=30.0, metavar="S",
                        help="a head job waiting this long is stalled (default: 30)")  # fmt: skip


def fetch(client: OpsClient, args: argparse.Namespace) -> Any:
    printers = client.get("/v1/printers")["printers"]
    queues = client.get("/v1/queues", stall_after_s=args.stall_after)["queues"]
    by_id = {q["printer_id"]: q for q in queues}
    for printer in printers:
        queue = by_id.get(printer["printer_id"], {})
        printer["flags"] = queue.get("flags", [])
        printer["head_wait_s"] = queue.get("head_wait_s")
    return {"printers": printers}


def health_detail(health: dict[str, Any] | None) -> str:
    if not health:
        return "no heartbeat yet"
    problems = [name.replace("_", " ") for name in ("jammed", "cover_open") if health.get(name)]
    if not health.get("reachable", True):
        problems.append("unreachable")
    if health.get("paper") in ("low", "out"):
        problems.append(f"paper {health['paper']}")
    return ", ".join(problems) or "ok"


def liveness(printer: dict[str, Any]) -> str:
    flags = printer["flags"]
    if "zombie" in flags:
        return "ZOMBIE (drain it)"
    if "stalled" in flags:
        return "stalled"
    return "ok" if printer["state"] != "dead" else "-"


def render(answer: Any, args: argparse.Namespace) -> str:
    rows = [
        [p["printer_id"], p["state"], p["paused"], p["queue_depth"], p["in_flight"],
         seconds(p["last_heartbeat_age_s"]), health_detail(p["health"]),
         seconds(p["head_wait_s"]), liveness(p)]
        for p in answer["printers"]
    ]  # fmt: skip
    headers = ["PRINTER", "STATE", "PAUSED", "QUEUE", "IN-FLIGHT", "HEARTBEAT", "HEALTH",
               "HEAD-WAIT", "LIVENESS"]  # fmt: skip
    return table(headers, rows) if rows else cell(None) + " (no printers have reported yet)"


def run(args: argparse.Namespace) -> int:
    return execute(args, fetch, render)
