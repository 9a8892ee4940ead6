"""`badgeline drain PRINTER [--to P …]`: fail a printer over by hand. It is
paused, and its queued and leased work moves to healthy printers (the ones
named with --to, else its peers); a job it was printing waits for its ack."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from badgeline.ops.command import printer_id
from badgeline.ops.failovers import render_decisions
from badgeline.ops.printer_command import PrinterCommand


def options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--to", dest="targets", nargs="+", type=printer_id, metavar="P",
                        help="move its work only to these printers")  # fmt: skip


def body(args: argparse.Namespace) -> dict[str, Any]:
    return {"targets": args.targets} if args.targets else {}


def targets(args: argparse.Namespace) -> Sequence[str]:
    return args.targets or ()


def render(answer: Any, args: argparse.Namespace) -> str:
    if not answer:
        return f"{args.printer}: nothing was drained (the decision had already run)"
    return f"drained {args.printer} (paused until resumed)\n" + render_decisions([answer])


COMMAND = PrinterCommand("drain", render, options, body, targets)
add_arguments = COMMAND.add_arguments
run = COMMAND.run
