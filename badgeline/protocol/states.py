"""Job and printer states as enums: the state machine of docs/architecture.md."""

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


class Confirmation(StrEnum):
    """How a printer's agent knows a badge printed: the guarantee behind `printed`."""

    # The printer's own word that the badge is out (ESC/POS GS ( H process ID).
    PROCESS_ID = "process_id"
    # A healthy status right after the badge: it may still have been in the buffer.
    STATUS = "status"
    # A write-only printer took the bytes; it cannot say whether the badge came out.
    SENT = "sent"


CONFIRMATION_GUARANTEES = {
    Confirmation.PROCESS_ID: "printed: the printer said the badge was out",
    Confirmation.STATUS: "sent, then the printer was healthy: the badge may still have"
    " been in its buffer",
    Confirmation.SENT: "sent: a write-only printer took the bytes and cannot say whether"
    " the badge came out",
}
