"""`badgeline job ID`: one job, and every state change it went through."""

from __future__ import annotations

import argparse
from typing import Any

from badgeline.ops.client import OpsClient
from badgeline.ops.command import add_common_options, execute
from badgeline.ops.tables import cell, clock, table

SUMMARY_FIELDS = ("state", "attendee_id", "printer_id", "printer_target", "priority",
                  "idempotency_key", "attempts", "prints", "possible_duplicate", "reprint_of",
                  "last_error")  # fmt: skip


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common_options(parser)
    parser.add_argument("job_id", help="a job id (job_…)")


def fetch(client: OpsClient, args: argparse.Namespace) -> Any:
    return client.get(f"/v1/jobs/{args.job_id}")


def render_history(history: list[dict[str, Any]]) -> str:
    rows = [[clock(h["at"]), h["from"], h["to"], h["actor"], h["reason"]] for h in history]
    return table(["AT-UTC", "FROM", "TO", "ACTOR", "REASON"], rows)


def render(answer: Any, args: argparse.Namespace) -> str:
    width = max(len(name) for name in SUMMARY_FIELDS)
    lines = [answer["job_id"]]
    lines += [f"  {name.ljust(width)}  {cell(answer[name])}" for name in SUMMARY_FIELDS]
    return "\n".join(lines) + "\n\n" + render_history(answer["history"])


def run(args: argparse.Namespace) -> int:
    return execute(args, fetch, render)
