"""`badgeline accept PRINTER` (as cupsaccept): a printer that was rejecting new jobs
takes them again: named, routed, spilled or failed over to it."""

from __future__ import annotations

import argparse
from typing import Any

from badgeline.ops.printer_command import PrinterCommand, render_printer


def render(answer: Any, args: argparse.Namespace) -> str:
    return f"{args.printer} accepts new jobs\n" + render_printer(answer, args)


COMMAND = PrinterCommand("accept", render)
add_arguments = COMMAND.add_arguments
run = COMMAND.run
