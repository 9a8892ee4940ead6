"""`badgeline alerts`: what needs a person now (a dead printer, paper low, a
zombie queue, parked jobs, no healthy printer, a duplicate print, dead
letters), and the recent alert events. With --check the exit status is 1
while a critical alert is active, so the command can gate a script."""

from __future__ import annotations

import argparse
from typing import Any

from badgeline.ops.client import EXIT_REFUSED, OpsClient
from badgeline.ops.command import add_common_options, execute
from badgeline.ops.tables import clock, section, table

RECENT_EVENTS = 10


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common_options(parser)
    parser.add_argument(
        "--stall-after",
        type=float,
        default=30.0,
        metavar="S",
        help="a head job waiting this long is stalled (default: 30)",
    )
    parser.add_argument("--check", action="store_true",
                        help="exit 1 while a critical alert is active")  # fmt: skip


def fetch(client: OpsClient, args: argparse.Namespace) -> Any:
    alerts = client.get_all("/v1/alerts", stall_after_s=args.stall_after)
    # The latest events only: the list keeps hundreds.
    events = client.get("/v1/alerts/events", limit=RECENT_EVENTS)["items"]
    return {**alerts, "events": events}


def render(answer: Any, args: argparse.Namespace) -> str:
    active = [[a["severity"].upper(), a["kind"], a["printer_id"], a["message"]]
              for a in answer["items"]]  # fmt: skip
    events = [[clock(e["at"]), e["kind"], e.get("printer_id"), e.get("previous")]
              for e in answer["events"]]  # fmt: skip
    return "\n\n".join([
        table(["SEVERITY", "KIND", "PRINTER", "MESSAGE"], active) if active else "no active alerts",
        section("recent events:",
                table(["AT-UTC", "EVENT", "PRINTER", "WAS"], events) if events else ""),
    ])  # fmt: skip


def verdict(answer: Any, args: argparse.Namespace) -> int:
    critical = any(a["severity"] == "critical" for a in answer["items"])
    return EXIT_REFUSED if args.check and critical else 0


def run(args: argparse.Namespace) -> int:
    return execute(args, fetch, render, verdict, flags={"stall_after_s": "--stall-after"})
