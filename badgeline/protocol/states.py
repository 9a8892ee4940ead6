"""Job and printer states: the state machine of ARCHITECTURE.md, as enums."""

from __future__ import annotations

from enum import StrEnum


class JobState(StrEnum):
    QUEUED = "queued"
    LEASED = "leased"
    PRINTING = "printing"
    PRINTED = "printed"
    CANCELED = "canceled"
    RETRYING = "retrying"
    DEAD_LETTERED = "dead_lettered"
    FAILED = "failed"
    PARKED = "parked"
    HELD = "held"


TERMINAL_STATES = frozenset({JobState.PRINTED, JobState.CANCELED, JobState.FAILED})


class AckResult(StrEnum):
    PRINTED = "printed"
    FAILED = "failed"
    # The agent lost power or crashed between the start grant and the print
    # confirmation: the badge may or may not have come out.
    UNCERTAIN = "uncertain"


class PrinterState(StrEnum):
    HEALTHY = "healthy"
    DEGRADED = "degraded"
    DEAD = "dead"


class PaperLevel(StrEnum):
    OK = "ok"
    LOW = "low"
    OUT = "out"


class StartRefusal(StrEnum):
    LEASE_REVOKED = "lease_revoked"
    ALREADY_PRINTED = "already_printed"
    CANCELED = "canceled"
