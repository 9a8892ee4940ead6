"""`badgeline drain PRINTER [--to P …]`: fail a printer over by hand. It is
paused, and its queued and leased work moves to healthy printers (the ones
named with --to, else its peers); a job it was printing waits for its ack."""

from __future__ import annotations

import argparse
from typing import Any

from badgeline.ops.client import OpsClient
from badgeline.ops.command import (
    add_common_options,
    add_force_option,
    execute,
    printer_id,
    require_known_printers,
)
from badgeline.ops.failovers import render_decisions


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common_options(parser)
    add_force_option(parser)
    parser.add_argument("printer", type=printer_id, help="the printer to drain")
    parser.add_argument("--to", dest="targets", nargs="+", type=printer_id, metavar="P",
                        help="move its work only to these printers")  # fmt: skip


def fetch(client: OpsClient, args: argparse.Namespace) -> Any:
    require_known_printers(client, args, args.printer, *(args.targets or []))
    body = {"targets": args.targets} if args.targets else {}
    return client.post(f"/v1/printers/{args.printer}/drain", body)


def render(answer: Any, args: argparse.Namespace) -> str:
    if not answer:
        return f"{args.printer}: nothing was drained (the decision had already run)"
    return f"drained {args.printer} (paused until resumed)\n" + render_decisions([answer])


def run(args: argparse.Namespace) -> int:
    return execute(args, fetch, render)
