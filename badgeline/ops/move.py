"""`badgeline move JOB --to TARGET` (as lpmove): move a job that no printer has started
(queued, leased and not yet started, or parked) to another printer, `pool:<name>` or
`auto`. It keeps its id, idempotency key and place in print order; its history
records the move. A job printing or finished is refused with its state."""

from __future__ import annotations

import argparse
import re
from typing import Any

from badgeline.ops.client import OpsClient
from badgeline.ops.command import add_common_options, execute, job_id

_TARGET = re.compile(r"printer-[a-z0-9]{1,16}|pool:[a-z0-9][a-z0-9-]{0,31}|auto")


def target(value: str) -> str:
    """An argparse type: a job's target, as `POST /v1/jobs` takes it."""
    if not _TARGET.fullmatch(value):
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a target: give a printer id (printer-…), pool:<name> or auto"
        )
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common_options(parser)
    parser.add_argument("job", type=job_id, metavar="JOB", help="the job to move")
    parser.add_argument("--to", required=True, type=target, metavar="TARGET",
                        help="a printer id, pool:<name> or auto")  # fmt: skip


def fetch(client: OpsClient, args: argparse.Namespace) -> Any:
    return client.post(f"/v1/jobs/{args.job}/move", {"printer_target": args.to})


def render(answer: Any, args: argparse.Namespace) -> str:
    if not answer["moved"]:
        return f"{answer['job_id']} is on {answer['printer_id']} already: nothing changed"
    return (f"moved {answer['job_id']} from {answer['moved_from']} to {answer['printer_id']} "
            "(same id, key and place in print order)")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    return execute(args, fetch, render, flags={"printer_target": "--to"})
