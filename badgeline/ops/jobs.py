"""`badgeline jobs --attendee ID`: every job of one attendee, oldest first,
so a desk can answer "where is my badge?" and spot a reprint."""

from __future__ import annotations

import argparse
from typing import Any

from badgeline.ops.client import OpsClient
from badgeline.ops.command import add_common_options, execute
from badgeline.ops.tables import clock, table


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common_options(parser)
    parser.add_argument("--attendee", required=True, metavar="ID", help="the attendee id")


def fetch(client: OpsClient, args: argparse.Namespace) -> Any:
    return client.get_all("/v1/jobs", attendee_id=args.attendee)


def render(answer: Any, args: argparse.Namespace) -> str:
    rows = [
        [j["job_id"], j["state"], j["printer_id"], j["prints"], clock(j["created_at"]),
         j["reprint_of"], j["possible_duplicate"], j["last_error"]]
        for j in answer["items"]
    ]  # fmt: skip
    if not rows:
        return f"no jobs for attendee {args.attendee}"
    headers = ["JOB", "STATE", "PRINTER", "PRINTS", "CREATED", "REPRINT-OF", "POSSIBLE-DUP",
               "LAST-ERROR"]  # fmt: skip
    return table(headers, rows)


def run(args: argparse.Namespace) -> int:
    return execute(args, fetch, render, flags={"attendee_id": "--attendee"})
