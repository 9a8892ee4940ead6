"""`badgeline pause PRINTER [--for 10m] [--reason TEXT]`: stop dispatch to a printer
(it takes no new leases; its queue waits). Without --for it lasts until `resume`;
the reason is shown with the printer (`badgeline printers`, the API) while it lasts."""

from __future__ import annotations

import argparse
from typing import Any

from badgeline.ops.command import bounded_text, duration, duration_text
from badgeline.ops.printer_command import PrinterCommand, render_printer

# The coordinator's bounds (api/printers.py): a week, and a sentence.
MAX_PAUSE_S = 7 * 24 * 3600
MAX_REASON_CHARS = 200


def pause_duration(value: str) -> float:
    seconds = duration(value)
    if seconds > MAX_PAUSE_S:
        raise argparse.ArgumentTypeError(f"{value!r}: a pause lasts at most 7 days (168h)")
    return seconds


def options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--for",
        dest="for_s",
        type=pause_duration,
        metavar="DURATION",
        help="resume by itself after this long: 30s, 10m, 2h (at most 7 days)",
    )
    parser.add_argument("--reason", type=bounded_text(MAX_REASON_CHARS), metavar="TEXT",
                        help=f"why, shown with the printer (at most {MAX_REASON_CHARS} "
                             "characters)")  # fmt: skip


def body(args: argparse.Namespace) -> dict[str, Any]:
    given = {"for_s": args.for_s, "reason": args.reason}
    return {name: value for name, value in given.items() if value is not None}


def render(answer: Any, args: argparse.Namespace) -> str:
    until = f" for {duration_text(args.for_s)}" if args.for_s else " until resumed"
    return f"paused {args.printer}{until}\n" + render_printer(answer, args)


COMMAND = PrinterCommand("pause", render, options, body,
                         flags={"for_s": "--for", "reason": "--reason"})  # fmt: skip
add_arguments = COMMAND.add_arguments
run = COMMAND.run
