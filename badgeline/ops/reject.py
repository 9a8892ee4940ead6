"""`badgeline reject PRINTER [--reason TEXT]` (as cupsreject): the printer takes no
new jobs. A submit naming it is refused (409 printer_rejecting), `auto` and pools
pass it by, nothing is moved or failed over to it; the jobs already in its queue
keep printing. `badgeline accept PRINTER` undoes it."""

from __future__ import annotations

import argparse
from typing import Any

from badgeline.ops.command import bounded_text
from badgeline.ops.pause import MAX_REASON_CHARS
from badgeline.ops.printer_command import PrinterCommand, render_printer


def options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--reason", type=bounded_text(MAX_REASON_CHARS), metavar="TEXT",
                        help=f"why, shown with the printer (at most {MAX_REASON_CHARS} "
                             "characters)")  # fmt: skip


def body(args: argparse.Namespace) -> dict[str, Any]:
    return {"reason": args.reason} if args.reason is not None else {}


def render(answer: Any, args: argparse.Namespace) -> str:
    waiting = answer["queue_depth"]
    return (f"{args.printer} rejects new jobs; the {waiting} job(s) in its queue still print\n"
            + render_printer(answer, args))  # fmt: skip


COMMAND = PrinterCommand("reject", render, options, body, flags={"reason": "--reason"})
add_arguments = COMMAND.add_arguments
run = COMMAND.run
