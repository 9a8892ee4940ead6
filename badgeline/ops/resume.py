"""`badgeline resume PRINTER`: restart dispatch to a paused printer now."""

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
from badgeline.ops.pause import render_one


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common_options(parser)
    add_force_option(parser)
    parser.add_argument("printer", type=printer_id, help="the printer to resume")


def fetch(client: OpsClient, args: argparse.Namespace) -> Any:
    require_known_printers(client, args, args.printer)
    return client.post(f"/v1/printers/{args.printer}/resume")


def render(answer: Any, args: argparse.Namespace) -> str:
    return f"resumed {args.printer}\n" + render_one(answer, args)


def run(args: argparse.Namespace) -> int:
    return execute(args, fetch, render)
