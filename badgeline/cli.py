"""The `badgeline` console command.

Each subcommand lives in its own module and is imported only when chosen, so
`badgeline agent` on a Pi never imports the coordinator's Redis stack and the
other way round (start-up time and memory matter on a Raspberry Pi).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

# subcommand -> (module, one-line help). The module provides
# `add_arguments(parser)` and `run(args) -> int`.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "coordinator": ("badgeline.coordinator.main", "run the coordinator (HTTP API + Redis)"),
    "agent": ("badgeline.agent.main", "run a print agent beside one printer"),
    "emulator": ("badgeline.emulator.main", "run a printer emulator: ESC/POS, ZPL or Brother QL"),
    "demo": ("badgeline.demo", "bring up a whole venue on this machine and print sample badges"),
    "hash-token": ("badgeline.coordinator.api.auth", "print the config entry for an API token"),
    "provision": ("badgeline.provision.main", "write agent config + installer into a Pi OS image"),
    # operator commands, over the coordinator's HTTP API (badgeline/ops, docs/runbook.md)
    "printers": ("badgeline.ops.printers", "every printer: health, queue, heartbeat, liveness"),
    "queues": ("badgeline.ops.queues", "queue depth per printer, flagged skewed/full/stalled"),
    "peek": ("badgeline.ops.peek", "the head of one printer's queue, in print order"),
    "job": ("badgeline.ops.job", "one job and its history"),
    "jobs": ("badgeline.ops.jobs", "an attendee's jobs"),
    "pause": ("badgeline.ops.pause", "stop dispatch to a printer, optionally for S seconds"),
    "resume": ("badgeline.ops.resume", "restart dispatch to a paused printer"),
    "drain": ("badgeline.ops.drain", "fail a printer over by hand: move its work"),
    "rebalance": ("badgeline.ops.rebalance", "move the excess of skewed queues to healthy peers"),
    "dlq": ("badgeline.ops.dlq", "list or redrive dead-lettered jobs"),
    "reconcile": ("badgeline.ops.reconcile", "exactly-once check: duplicates, gaps, overdue jobs"),
    "reprint": ("badgeline.ops.reprint", "reprint a job as a new job, with a reason"),
    "failovers": ("badgeline.ops.failovers", "failover decisions, newest first"),
    "stats": ("badgeline.ops.stats", "badges printed by printer, hour or kiosk; failures"),
    "alerts": ("badgeline.ops.alerts", "active alerts and recent alert events"),
    "enrolment-code": (
        "badgeline.ops.enrolment_code",
        "a one-time code a new agent trades for its token",
    ),
}


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter without its `import shutil`, which with the bz2 and lzma
    modules it loads costs every `badgeline agent` 0.6 MB on a Pi (argparse builds a
    formatter for each argument added, to check its metavar). The width follows
    shutil.get_terminal_size's rule: $COLUMNS, else the terminal's, else 80."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=_terminal_columns() - 2)


def _terminal_columns() -> int:
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="badgeline", formatter_class=_HelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    chosen = argv[0] if argv else None
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        sub_parser = sub.add_parser(
            name, help=help_text, description=help_text, formatter_class=_HelpFormatter
        )
        sub_parser.set_defaults(_module=module_name)
        if name == chosen:
            importlib.import_module(module_name).add_arguments(sub_parser)
    args = parser.parse_args(argv)
    module = importlib.import_module(args._module)
    try:
        result: int = module.run(args)
        sys.stdout.flush()  # a closed pipe shows here, not as "Exception ignored" at exit
    except BrokenPipeError:
        # `badgeline reconcile | head`: the reader took what it wanted; no traceback.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return result


if __name__ == "__main__":
    sys.exit(main())
