"""`badgeline reconcile`: did every accepted badge print exactly once?

Printed-more-than-once must be empty (a duplicate badge is a bug, or a print
the agent could not confirm); possible duplicates are the flagged re-prints
of unconfirmed jobs; not-terminal lists jobs still unfinished past the
deadline. With --check the exit status says whether it is clean
(docs/runbook.md, "A printer drops mid-rush", steps 3 and 6)."""

from __future__ import annotations

import argparse
from typing import Any

from badgeline.ops.client import EXIT_REFUSED, OpsClient
from badgeline.ops.command import add_common_options, execute
from badgeline.ops.tables import seconds, section, table


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common_options(parser)
    parser.add_argument("--deadline", type=float, default=300.0, metavar="S",
                        help="a job unfinished this long after acceptance is listed "
                             "(default: %(default)s)")  # fmt: skip
    parser.add_argument("--check", action="store_true",
                        help="exit 1 unless nothing printed twice, nothing is overdue "
                             "and every accepted job is accounted for")  # fmt: skip


def fetch(client: OpsClient, args: argparse.Namespace) -> Any:
    return client.get_all("/v1/reconcile", deadline_s=args.deadline)


def _jobs(answer: Any, finding: str) -> str:
    rows = [[j["job_id"], j["attendee_id"], j["state"], j["printer_id"], j["prints"],
             seconds(j["age_s"])] for j in answer["items"] if j["finding"] == finding]  # fmt: skip
    return table(["JOB", "ATTENDEE", "STATE", "PRINTER", "PRINTS", "AGE"], rows) if rows else ""


def _retired(answer: Any) -> dict[str, int]:
    """What left Redis after its retention ({} from a coordinator that keeps none)."""
    retired: dict[str, int] = answer["counts"].get("retired") or {}
    return retired


def clean(answer: Any) -> bool:
    # A job printed twice stays a finding after it has left Redis.
    found = answer["findings"]
    return not (found["printed_more_than_once"] or found["not_terminal"]
                or answer["counts"]["unaccounted"]
                or _retired(answer).get("printed_more_than_once"))  # fmt: skip


def render(answer: Any, args: argparse.Namespace) -> str:
    c = answer["counts"]
    summary = (f"accepted {c['accepted']}  printed {c['printed']}  canceled {c['canceled']}  "
               f"expired {c.get('expired', 0)}  "  # 0 from a coordinator without deadlines
               f"failed {c['failed']}  open {c['open']}  unaccounted {c['unaccounted']}  "
               f"(shed at submission {c['shed']}, reprints {c['reprints']})")  # fmt: skip
    retired = _retired(answer)
    if retired.get("jobs"):
        summary += (f"\nleft Redis after their retention {retired['jobs']} (failed"
                    f" {retired['failed']}, printed more than once"
                    f" {retired['printed_more_than_once']}, possible duplicates"
                    f" {retired['possible_duplicates']}): their records are in the audit"
                    " export")  # fmt: skip
    parts = [
        summary,
        section("printed more than once (must be empty):",
                _jobs(answer, "printed_more_than_once")),
        section("possible duplicates (flagged re-prints of unconfirmed jobs):",
                _jobs(answer, "possible_duplicates")),
        section(f"not terminal after {answer['deadline_s']:g} s:", _jobs(answer, "not_terminal")),
        "CLEAN" if clean(answer) else "NOT CLEAN",
    ]  # fmt: skip
    if answer["truncated"]:
        parts.insert(1, "(truncated: more live jobs than one report reads)")
    return "\n\n".join(parts)


def verdict(answer: Any, args: argparse.Namespace) -> int:
    return EXIT_REFUSED if args.check and not clean(answer) else 0


def run(args: argparse.Namespace) -> int:
    return execute(args, fetch, render, verdict, flags={"deadline_s": "--deadline"})
