"""`badgeline printers`: is each printer alive, and is it actually printing?

Health comes from the agents' heartbeats; liveness from the queue itself: a
printer whose head job has waited past --stall-after behind fresh heartbeats
is a zombie (docs/runbook.md, "A queue stalls", step 3), to be drained rather than
cleared."""

from __future__ import annotations

import argparse
import time
from typing import Any

from badgeline.ops.client import OpsClient
from badgeline.ops.command import add_common_options, execute
from badgeline.ops.tables import cell, clock, seconds, table

# A pause that ends further off than the longest --for was one "until resumed".
ONE_WEEK_S = 7 * 24 * 3600 + 60


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common_options(parser)
    parser.add_argument("--stall-after", type=float, default=30.0, metavar="S",
                        help="a head job waiting this long is stalled (default: 30)")  # fmt: skip


def fetch(client: OpsClient, args: argparse.Namespace) -> Any:
    printers = client.get_all("/v1/printers")["items"]
    queues = client.get_all("/v1/queues", stall_after_s=args.stall_after)["items"]
    by_id = {q["printer_id"]: q for q in queues}
    for printer in printers:
        queue = by_id.get(printer["printer_id"], {})
        printer["flags"] = queue.get("flags", [])
        printer["head_wait_s"] = queue.get("head_wait_s")
    return {"items": printers, "next": None}


def health_detail(health: dict[str, Any] | None) -> str:
    """One word, as a table cell: `ok`, `paper-low`, `jammed,paper-out`, …"""
    if not health:
        return "no-heartbeat-yet"
    problems = [name.replace("_", "-") for name in ("jammed", "cover_open") if health.get(name)]
    if not health.get("reachable", True):
        problems.append("unreachable")
    if health.get("paper") in ("low", "out"):
        problems.append(f"paper-{health['paper']}")
    return ",".join(problems) or "ok"


def liveness(printer: dict[str, Any]) -> str:
    flags = printer["flags"]
    if "zombie" in flags:
        return "ZOMBIE (drain it)"
    if "stalled" in flags:
        return "stalled"
    return "ok" if printer["state"] != "dead" else "-"


def notes(printer: dict[str, Any]) -> list[str]:
    """What an operator said when pausing or rejecting it, and until when."""
    said = []
    if printer.get("paused"):
        until = printer.get("paused_until")
        # A pause without --for is kept as a year: that is "until resumed".
        timed = until is not None and until - time.time() < ONE_WEEK_S
        note = f"paused until {clock(until)} UTC" if timed else "paused until resumed"
        reason = printer.get("paused_reason")
        said.append(f"{note}: {reason}" if reason else note)
    if printer.get("rejecting"):
        reason = printer.get("rejecting_reason")
        said.append(f"rejecting new jobs: {reason}" if reason else "rejecting new jobs")
    return said


def render(answer: Any, args: argparse.Namespace) -> str:
    printers = answer["items"]
    rows = [
        [p["printer_id"], p["state"], p["paused"], not p.get("rejecting", False),
         p["queue_depth"], p["in_flight"], seconds(p["last_heartbeat_age_s"]),
         health_detail(p["health"]), seconds(p["head_wait_s"]), liveness(p)]
        for p in printers
    ]  # fmt: skip
    if not rows:
        return cell(None) + " (no printers have reported yet)"
    headers = ["PRINTER", "STATE", "PAUSED", "ACCEPTING", "QUEUE", "IN-FLIGHT", "HEARTBEAT",
               "HEALTH", "HEAD-WAIT", "LIVENESS"]  # fmt: skip
    said = [f"  {p['printer_id']}: {note}" for p in printers for note in notes(p)]
    return table(headers, rows) + ("\n\nnotes:\n" + "\n".join(said) if said else "")


def run(args: argparse.Namespace) -> int:
    return execute(args, fetch, render, flags={"stall_after_s": "--stall-after"})
