"""`badgeline stats [--by printer|hour|source]`: badges printed by printer,
by hour or by submitting kiosk, the reprint rate and why prints failed."""

from __future__ import annotations

import argparse
from typing import Any

from badgeline.ops.client import OpsClient
from badgeline.ops.command import add_common_options, execute
from badgeline.ops.tables import section, table

KEY_COLUMN = {"printer": "printer_id", "hour": "hour", "source": "source"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common_options(parser)
    parser.add_argument("--by", choices=sorted(KEY_COLUMN), default="printer",
                        help="group badges printed by (default: %(default)s)")  # fmt: skip


def fetch(client: OpsClient, args: argparse.Namespace) -> Any:
    return client.get_all("/v1/stats", by=args.by)


def render(answer: Any, args: argparse.Namespace) -> str:
    key = KEY_COLUMN[answer["by"]]
    columns = [key, "printed"] + (["failed_attempts"] if answer["by"] == "printer" else [])
    rows = [[row[c] for c in columns] for row in answer["items"]]
    t = answer["totals"]
    totals = (f"accepted {t['accepted']}  printed {t['printed']}  reprints {t['reprints']} "
              f"(rate {answer['reprint_rate']:.1%})  failed attempts {t['failed_attempts']}  "
              f"shed {t['shed']}  canceled {t['canceled']}  "
              f"expired {t.get('expired', 0)}")  # fmt: skip
    reasons = [[r["count"], r["reason"]] for r in answer["failure_reasons"]]
    return "\n\n".join([
        section(f"badges printed by {answer['by']}:",
                table([c.upper().replace("_", "-") for c in columns], rows) if rows else ""),
        totals,
        section("failure reasons:", table(["COUNT", "REASON"], reasons) if reasons else ""),
    ])  # fmt: skip


def run(args: argparse.Namespace) -> int:
    return execute(args, fetch, render, flags={"by": "--by"})
