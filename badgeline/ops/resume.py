"""`badgeline resume PRINTER`: restart dispatch to a paused printer now."""

from __future__ import annotations

import argparse
from typing import Any

from badgeline.ops.printer_command import PrinterCommand, render_printer


def render(answer: Any, args: argparse.Namespace) -> str:
    return f"resumed {args.printer}\n" + render_printer(answer, args)


COMMAND = PrinterCommand("resume", render)
add_arguments = COMMAND.add_arguments
run = COMMAND.run
