"""`badgeline reprint JOB --reason …`: a new badge for a printed, failed or
canceled job, as a new job linked to it; the original is never rewritten."""

from __future__ import annotations

import argparse
from typing import Any

from badgeline.ops.client import OpsClient
from badgeline.ops.command import (
    add_common_options,
    add_force_option,
    execute,
    require_known_printers,
)
from badgeline.ops.job import render as render_job


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common_options(parser)
    add_force_option(parser)
    parser.add_argument("job_id", help="the job to reprint (job_…)")
    parser.add_argument("--reason", required=True, help="why: it goes into the new job's history")
    parser.add_argument("--target", help="a printer id or pool:<name> (default: the original's)")
    parser.add_argument("--priority", type=int, help="0-1000, lower first (default: 0)")


def fetch(client: OpsClient, args: argparse.Namespace) -> Any:
    body: dict[str, Any] = {"reason": args.reason}
    if args.target:
        if args.target.startswith("printer-"):
            # A typo would queue the attendee's badge on a printer that does not exist.
            require_known_printers(client, args, args.target)
        body["printer_target"] = args.target
    if args.priority is not None:
        body["priority"] = args.priority
    return client.post(f"/v1/jobs/{args.job_id}/reprint", body)


def render(answer: Any, args: argparse.Namespace) -> str:
    return f"reprint of {args.job_id} accepted as {answer['job_id']}\n" + render_job(answer, args)


def run(args: argparse.Namespace) -> int:
    return execute(args, fetch, render)
