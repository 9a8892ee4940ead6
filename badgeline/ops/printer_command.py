"""What `pause`, `resume`, `drain`, `reject` and `accept` share: one printer named on
the command line (refused unless the coordinator knows it, or --force), one POST to
`/v1/printers/{printer}/{action}`, and the answer as --json or a table.

Each command's module says what it adds: its options, the body it sends and how
it renders the answer.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from badgeline.ops.client import OpsClient
from badgeline.ops.command import (
    Render,
    add_common_options,
    add_force_option,
    execute,
    printer_id,
    require_known_printers,
)
from badgeline.ops.printers import render as render_printers


def _no_options(parser: argparse.ArgumentParser) -> None:
    pass


def _no_body(args: argparse.Namespace) -> dict[str, Any]:
    return {}


def _no_others(args: argparse.Namespace) -> Sequence[str]:
    return ()


@dataclass(frozen=True)
class PrinterCommand:
    action: str  # the verb of the CLI and the API: pause, resume, drain, reject, accept
    render: Render
    options: Callable[[argparse.ArgumentParser], None] = _no_options
    body: Callable[[argparse.Namespace], dict[str, Any]] = _no_body
    # other printers the command names, checked as the printer is
    others: Callable[[argparse.Namespace], Sequence[str]] = _no_others
    # the API's fields by the flag that fills them, for refusals (`for_s` is `--for`)
    flags: Mapping[str, str] = field(default_factory=dict)

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_common_options(parser)
        add_force_option(parser)
        parser.add_argument("printer", type=printer_id, help=f"the printer to {self.action}")
        self.options(parser)

    def fetch(self, client: OpsClient, args: argparse.Namespace) -> Any:
        require_known_printers(client, args, args.printer, *self.others(args))
        return client.post(f"/v1/printers/{args.printer}/{self.action}", self.body(args))

    def run(self, args: argparse.Namespace) -> int:
        return execute(args, self.fetch, self.render, flags=self.flags)


def render_printer(answer: Any, args: argparse.Namespace) -> str:
    """The printer's row, as `badgeline printers` shows it."""
    printer = {**answer, "flags": [], "head_wait_s": None}
    return render_printers({"items": [printer]}, args)
