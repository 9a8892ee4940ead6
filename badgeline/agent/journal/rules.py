"""Rules a transition obeys beyond the table in states.py: what a repeated transition
must repeat, and which earlier lease of a job blocks printing it again."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from badgeline.agent.journal.errors import IllegalTransitionError
from badgeline.agent.journal.models import JournalEntry
from badgeline.agent.journal.states import LocalJobState
from badgeline.protocol.states import AckResult


def check_repeat(entry: JournalEntry, target: LocalJobState, expected: Mapping[str, Any]) -> None:
    """A repeated transition is a no-op only if it says the same thing (e.g. the same fence)."""
    for name, value in expected.items():
        if getattr(entry, name) != value:
            raise IllegalTransitionError(
                entry.job_id,
                entry.lease_id,
                entry.state,
                target,
                f"already {entry.state} with {name}={getattr(entry, name)!r}, not {value!r}",
            )


def print_blocker(history: list[JournalEntry]) -> JournalEntry | None:
    """An earlier lease whose badge printed, or may have, or is printing right now.

    An `uncertain` result the coordinator has confirmed (acked) no longer
    blocks: re-dispatching it is the coordinator's documented decision.
    """
    for entry in history:
        if entry.state in (LocalJobState.GRANTED, LocalJobState.PRINTED, LocalJobState.UNCERTAIN):
            return entry
        if entry.state is LocalJobState.ACKED and entry.outcome is AckResult.PRINTED:
            return entry
    return None
