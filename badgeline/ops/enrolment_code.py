"""`badgeline enrolment-code PRINTER [--ttl S]`: a one-time code for a new agent.

The code goes into the agent's config (`badgeline provision --enrolment-code`);
at its first start the agent exchanges it for its own token (POST /v1/enrol).
The coordinator keeps only the code's hash, so this is the one time it is shown.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from badgeline.ops.client import OpsClient
from badgeline.ops.command import add_common_options, execute, printer_id


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common_options(parser)
    parser.add_argument("printer", type=printer_id, help="the printer the agent will run")
    parser.add_argument("--ttl", dest="ttl_s", type=int, metavar="S",
                        help="seconds the code stays usable (default: the coordinator's "
                             "enrolment_code_ttl_s, 24 h)")  # fmt: skip


def fetch(client: OpsClient, args: argparse.Namespace) -> Any:
    body: dict[str, Any] = {"printer_id": args.printer}
    if args.ttl_s is not None:
        body["ttl_s"] = args.ttl_s
    return client.post("/v1/enrolment-codes", body)


def render(answer: Any, args: argparse.Namespace) -> str:
    expires = time.strftime("%Y-%m-%d %H:%M %Z", time.localtime(float(answer["expires_at"])))
    return (
        f"{answer['code']}\n"
        f"enrolment code for {answer['printer_id']}: works once, until {expires}\n"
        f"badgeline provision IMAGE --printer-id {answer['printer_id']} "
        f"--enrolment-code {answer['code']} …"
    )


def run(args: argparse.Namespace) -> int:
    return execute(args, fetch, render, flags={"ttl_s": "--ttl", "printer_id": "PRINTER"})
