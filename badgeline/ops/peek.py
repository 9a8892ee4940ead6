"""`badgeline peek PRINTER`: the head of a queue in print order, with how
long each job has waited and whether it has failed before (docs/runbook.md, "A queue stalls",
step 2)."""

from __future__ import annotations

import argparse
import time
from typing import Any

from badgeline.ops.client import OpsClient
from badgeline.ops.command import (
    add_common_options,
    execute,
    printer_id,
    require_known_printers,
)
from badgeline.ops.tables import seconds, table


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common_options(parser)
    parser.add_argument("printer", type=printer_id, help="the printer whose queue to show")
    parser.add_argument("--limit", type=int, default=10,
                        help="jobs to show, 1-500 (default: %(default)s)")  # fmt: skip


def fetch(client: OpsClient, args: argparse.Namespace) -> Any:
    # A typo would read "0 job(s) waiting" while the real printer's head is stuck.
    require_known_printers(client, args, args.printer)
    return client.get(f"/v1/queues/{args.printer}", limit=args.limit)


def render(answer: Any, args: argparse.Namespace) -> str:
    now = time.time()
    rows = [
        [position, job["job_id"], job["attendee_id"], job["priority"], job["attempts"],
         seconds(now - job["updated_at"]), job["possible_duplicate"], job["last_error"]]
        for position, job in enumerate(answer["items"])
    ]  # fmt: skip
    head = f"{answer['printer_id']}: {answer['depth']} job(s) waiting"
    if not rows:
        return head
    headers = ["#", "JOB", "ATTENDEE", "PRIORITY", "ATTEMPTS", "WAITING", "POSSIBLE-DUP",
               "LAST-ERROR"]  # fmt: skip
    return head + "\n" + table(headers, rows)


def run(args: argparse.Namespace) -> int:
    return execute(args, fetch, render, flags={"limit": "--limit"})
