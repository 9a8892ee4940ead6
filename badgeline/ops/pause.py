"""`badgeline pause PRINTER [--for S]`: stop dispatch to a printer (it takes
no new leases; its queue waits). Without --for it lasts until `resume`."""

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
from badgeline.ops.printers import render as render_printers


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common_options(parser)
    add_force_option(parser)
    parser.add_argument("printer", type=printer_id, help="the printer to pause")
    parser.add_argument("--for", dest="for_s", type=float, metavar="S",
                        help="resume by itself after S seconds")  # fmt: skip


def fetch(client: OpsClient, args: argparse.Namespace) -> Any:
    require_known_printers(client, args, args.printer)
    body = {"for_s": args.for_s} if args.for_s is not None else {}
    return client.post(f"/v1/printers/{args.printer}/pause", body)


def render_one(answer: Any, args: argparse.Namespace) -> str:
    printer = {**answer, "flags": [], "head_wait_s": None}
    return render_printers({"printers": [printer]}, args)


def render(answer: Any, args: argparse.Namespace) -> str:
    until = f" for {args.for_s:g} s" if args.for_s else " until resumed"
    return f"paused {args.printer}{until}\n" + render_one(answer, args)


def run(args: argparse.Namespace) -> int:
    return execute(args, fetch, render)
