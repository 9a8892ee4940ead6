"""What every operator command shares: --url/--token/--json, one-line errors
with a non-zero exit, and JSON or a table on stdout."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable, Mapping
from typing import Any

from badgeline.ops.client import DEFAULT_URL, EXIT_USAGE, OpsClient, OpsError

# A command calls the API and returns what --json prints, and a renderer turns
# that into the table an operator reads.
Call = Callable[[OpsClient, argparse.Namespace], Any]
Render = Callable[[Any, argparse.Namespace], str]
# A command may decide its exit status from the answer (a failed check is 1).
Verdict = Callable[[Any, argparse.Namespace], int]


def add_common_options(parser: argparse.ArgumentParser, timeout_help: str | None = None) -> None:
    """--url, --token, --json, --timeout; `timeout_help` for a command whose --timeout
    means more than one answer's wait (its default is then None: the command decides)."""
    parser.add_argument(
        "--url",
        default=os.environ.get("BADGELINE_URL", DEFAULT_URL),
        help="the coordinator (default: $BADGELINE_URL or %(default)s)",
    )
    parser.add_argument(
        "--token",
        default=os.environ.get("BADGELINE_TOKEN"),
        help="an operator token (default: $BADGELINE_TOKEN)",
    )
    parser.add_argument("--json", action="store_true", help="print the API's JSON answer")
    parser.add_argument(
        "--timeout", type=positive_seconds, metavar="S", default=None if timeout_help else 10.0,
        help=timeout_help or "seconds to wait for an answer (default: 10)",
    )  # fmt: skip


def execute(args: argparse.Namespace, call: Call, render: Render, verdict: Verdict | None = None,
            flags: Mapping[str, str] | None = None) -> int:  # fmt: skip
    """Call, print, exit status. `flags` names the command's flags by the API field each
    fills, so that a refusal names what the person typed (`--for`, not `for_s`)."""
    client = OpsClient(args.url, args.token, args.timeout, flags or {})
    try:
        answer = call(client, args)
    except OpsError as error:
        print(f"badgeline {args.command}: {error}", file=sys.stderr)
        return error.exit_code
    if args.json:
        print(json.dumps(answer, indent=2, sort_keys=True))
    else:
        print(render(answer, args))
    return verdict(answer, args) if verdict else 0


def positive_seconds(value: str) -> float:
    """An argparse type: 0 or less made urllib fail with a misleading network error."""
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds") from None
    if not seconds > 0:
        raise argparse.ArgumentTypeError(f"{value!r}: give a number of seconds above 0")
    return seconds


_JOB_ID = re.compile(r"job_[0-9a-f]{16}")
_DURATION = re.compile(r"(?:\d+(?:\.\d+)?[hms])+")
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)([hms])")
_UNIT_S = {"h": 3600, "m": 60, "s": 1}


def duration(value: str) -> float:
    """An argparse type: 30s, 10m, 2h, 1h30m, or plain seconds (90), as seconds."""
    text = value.strip().lower()
    if re.fullmatch(r"\d+(?:\.\d+)?", text):
        seconds = float(text)
    elif _DURATION.fullmatch(text):
        seconds = sum(float(n) * _UNIT_S[unit] for n, unit in _DURATION_PART.findall(text))
    else:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a duration: give e.g. 30s, 10m, 2h or 1h30m"
        )
    if not seconds > 0:
        raise argparse.ArgumentTypeError(f"{value!r}: give a duration above 0 (30s, 10m, 2h)")
    return seconds


def duration_text(seconds: float) -> str:
    """Seconds as `duration` reads them back: 45s, 10m, 1h30m."""
    whole = round(seconds)
    if whole != seconds or whole < 60:
        return f"{seconds:g}s"
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [(hours, "h"), (minutes, "m"), (secs, "s")]
    return "".join(f"{n}{unit}" for n, unit in parts if n)


def bounded_text(limit: int) -> Callable[[str], str]:
    """An argparse type for a reason or a note: 1 to `limit` characters, trimmed."""

    def check(value: str) -> str:
        text = value.strip()
        if not text:
            raise argparse.ArgumentTypeError("give a few words, not an empty text")
        if len(text) > limit:
            raise argparse.ArgumentTypeError(f"{len(text)} characters; say it in at most {limit}")
        return text

    return check


def job_id(value: str) -> str:
    """An argparse type: a job id as the coordinator mints them."""
    if not _JOB_ID.fullmatch(value):
        raise argparse.ArgumentTypeError(f"{value!r} is not a job id (job_ and 16 hex digits)")
    return value


def printer_id(value: str) -> str:
    """An argparse type: refuse a typo before it becomes a 404."""
    if not value.startswith("printer-"):
        raise argparse.ArgumentTypeError(f"{value!r} is not a printer id (printer-…)")
    return value


def add_force_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--force", action="store_true",
                        help="act on printers this coordinator has never heard of")  # fmt: skip


def require_known_printers(client: OpsClient, args: argparse.Namespace, *named: str) -> None:
    """A typo at peak (`pause printer-a11` for printer-a1) would be answered with
    success while the intended printer carries on: refuse printers the
    coordinator has never heard of, unless --force (a printer not set up yet)."""
    if getattr(args, "force", False):  # read-only commands have no --force
        return
    known = [p["printer_id"] for p in client.get_all("/v1/printers")["items"]]
    unknown = [p for p in named if p not in known]
    if unknown:
        listed = ", ".join(known[:12]) + (", …" if len(known) > 12 else "") or "none yet"
        raise OpsError(
            f"{', '.join(unknown)}: this coordinator knows no such printer (it never had a "
            f"heartbeat or a job; known: {listed}); check the id, or pass --force", EXIT_USAGE,
        )  # fmt: skip
