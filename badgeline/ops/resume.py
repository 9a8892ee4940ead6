"""`badgeline resume PRINTER`: restart dispatch to a paused printer now."""

from __future__ import annotations

import argparse
from typing import Any

from badgeline.ops.client import OpsClient
from badgeline.ops.command import add_common_options, execute, printer_id
from badgeline.ops.pause import render_one


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common_options(parser)
    parser.add_argument("printer", type=printer_id, help="the printer to resume")


def fetch(client: OpsClient, args: argparse.Namespace) -> Any:
    return client.post(f"/v1/printers/{args.printer}/resume")


def render(answer: Any, args: argparse.Namespace) -> str:
    return f"resumed {args.printer}\n" + render_one(answer, args)


def run(args: argparse.Namespace) -> int:
    return execute(args, fetch, render)
