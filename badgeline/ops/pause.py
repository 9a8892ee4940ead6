"""`badgeline pause PRINTER [--for S]`: stop dispatch to a printer (it takes
no new leases; its queue waits). Without --for it lasts until `resume`."""

from __future__ import annotations

import argparse
from typing import Any

from badgeline.ops.printer_command import PrinterCommand, render_printer


def options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--for", dest="for_s", type=float, metavar="S",
                        help="resume by itself after S seconds")  # fmt: skip


def body(args: argparse.Namespace) -> dict[str, Any]:
    return {"for_s": args.for_s} if args.for_s is not None else {}


def render(answer: Any, args: argparse.Namespace) -> str:
    until = f" for {args.for_s:g} s" if args.for_s else " until resumed"
    return f"paused {args.printer}{until}\n" + render_printer(answer, args)


COMMAND = PrinterCommand("pause", render, options, body)
add_arguments = COMMAND.add_arguments
run = COMMAND.run
