"""`badgeline reprint JOB --reason …`: a new badge for a printed, failed or
canceled job, as a new job linked to it; the original is never rewritten."""

from __future__ import annotations

import argparse
import secrets
from typing import Any

from badgeline.ops.client import EXIT_UNREACHABLE, OpsClient, OpsError
from badgeline.ops.command import (
    add_common_options,
    add_force_option,
    execute,
    require_known_printers,
)
from badgeline.ops.job import render as render_job

# The API's fields by the flag that fills them: a refusal names what was typed.
FLAGS = {"reason": "--reason", "printer_target": "--target", "priority": "--priority",
         "request_id": "--request-id"}  # fmt: skip


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common_options(parser)
    add_force_option(parser)
    parser.add_argument("job_id", help="the job to reprint (job_…)")
    parser.add_argument("--reason", required=True, help="why: it goes into the new job's history")
    parser.add_argument("--target", help="a printer id or pool:<name> (default: the original's)")
    parser.add_argument("--priority", type=int, help="0-1000, lower first (default: 0)")
    parser.add_argument(
        "--request-id", metavar="ID",
        help="names this reprint (8-80 printable characters): the same ID again never makes a "
             "second badge (default: a new one; an error that leaves it unknown prints it)",
    )  # fmt: skip


def fetch(client: OpsClient, args: argparse.Namespace) -> Any:
    body: dict[str, Any] = {"reason": args.reason}
    if args.target:
        if args.target.startswith("printer-"):
            # A typo would queue the attendee's badge on a printer that does not exist.
            require_known_printers(client, args, args.target)
        body["printer_target"] = args.target
    if args.priority is not None:
        body["priority"] = args.priority
    body["request_id"] = args.request_id or "cli-" + secrets.token_hex(8)
    path = f"/v1/jobs/{args.job_id}/reprint"
    try:
        return client.post(path, body)
    except OpsError as lost:
        if lost.exit_code != EXIT_UNREACHABLE:
            raise
    # The coordinator may have made the reprint before the answer was lost; the
    # same request_id lets one more try find it instead of making a second badge.
    try:
        return client.post(path, body)
    except OpsError as error:
        if error.exit_code != EXIT_UNREACHABLE:
            raise
        raise OpsError(
            f"{error}; the reprint may have been made: run the same command with "
            f"--request-id {body['request_id']} to finish it without a second badge",
            EXIT_UNREACHABLE,
        ) from None


def render(answer: Any, args: argparse.Namespace) -> str:
    return f"reprint of {args.job_id} accepted as {answer['job_id']}\n" + render_job(answer, args)


def run(args: argparse.Namespace) -> int:
    return execute(args, fetch, render, flags=FLAGS)
