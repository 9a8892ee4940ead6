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
import types
from typing import NoReturn

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
    # lp / CUPS's verbs: submit, cancel, move, reject, accept
    "submit": ("badgeline.ops.submit", "print a badge PDF for an attendee (as lp)"),
    "cancel": ("badgeline.ops.cancel", "cancel jobs, or all of a printer's waiting jobs"),
    "move": ("badgeline.ops.move", "move a waiting job to another printer or pool"),
    "reject": ("badgeline.ops.reject", "a printer takes no new jobs; its queue prints"),
    "accept": ("badgeline.ops.accept", "a rejecting printer takes new jobs again"),
}

# The extra each subcommand's own stack comes in (pyproject.toml); the operator
# commands need none (urllib and pydantic only).
EXTRAS: dict[str, str] = {
    "coordinator": "coordinator",
    "hash-token": "coordinator",
    "agent": "agent",
    "emulator": "emulator",
    "demo": "coordinator,agent,emulator,demo",
    "provision": "provision",
}


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter without its `import shutil`, which with the bz2 and lzma
    modules it loads costs every `badgeline agent` 0.6 MB on a Pi (argparse builds a
    formatter for each argument added, to check its metavar). The width follows
    shutil.get_terminal_size's rule: $COLUMNS, else the terminal's, else 80."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=_terminal_columns() - 2)


class _Parser(argparse.ArgumentParser):
    """Bad usage is one line naming what to fix, exit 2: argparse's own answer, a usage
    synopsis then the error, buries the one line that matters; the synopsis is a
    `--help` away."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


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


class _ExtraMissing(Exception):
    """A subcommand whose extra is not installed (a wheel installed without it)."""


def _load(command: str, module_name: str) -> types.ModuleType:
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        missing = (error.name or "").partition(".")[0]
        if not missing or missing == "badgeline":
            raise
        extra = EXTRAS.get(command, "dev")
        raise _ExtraMissing(
            f"badgeline {command}: {missing} is not installed; "
            f"install the {extra} extra: pip install 'badgeline[{extra}]'"
        ) from error


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except _ExtraMissing as error:
        print(error, file=sys.stderr)
        return 2


def _main(argv: list[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = _Parser(prog="badgeline", formatter_class=_HelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    chosen = argv[0] if argv else None
    chosen_parser: argparse.ArgumentParser = parser
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        sub_parser = sub.add_parser(
            name, help=help_text, description=help_text, formatter_class=_HelpFormatter
        )
        sub_parser.set_defaults(_module=module_name)
        if name == chosen:
            _load(name, module_name).add_arguments(sub_parser)
            chosen_parser = sub_parser
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # named by the command they were given to: `badgeline pause: … --frob`
        chosen_parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    module = _load(args.command, args._module)
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
