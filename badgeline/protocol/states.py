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
    # Not started by its submitter's deadline (`expire_after_s`): never printed late.
    EXPIRED = "expired"


TERMINAL_STATES = frozenset(
    {JobState.PRINTED, JobState.CANCELED, JobState.FAILED, JobState.EXPIRED}
)


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
    EXPIRED = "expired"


class Confirmation(StrEnum):
    """How a printer's agent knows a badge printed: the guarantee behind `printed`."""

    # The printer's own word that the badge is out (ESC/POS GS ( H process ID).
    PROCESS_ID = "process_id"
    # A Zebra's ~HS host status after the label: no format waiting, none half
    # received, no label of the batch left to print (ZPL II Programming Guide, ~HS).
    HOST_STATUS = "host_status"
    # A Brother QL's own "printing completed" status for the label (Raster Command
    # Reference, ESC i S status: status type 01h).
    PRINT_COMPLETED = "print_completed"
    # A healthy status right after the badge: it may still have been in the buffer.
    STATUS = "status"
    # A write-only printer took the bytes; it cannot say whether the badge came out.
    SENT = "sent"


CONFIRMATION_GUARANTEES = {
    Confirmation.PROCESS_ID: "printed: the printer said the badge was out",
    Confirmation.HOST_STATUS: "printed: the Zebra's host status said no label was waiting"
    " or printing after the badge",
    Confirmation.PRINT_COMPLETED: "printed: the Brother said it had completed printing the badge",
    Confirmation.STATUS: "sent, then the printer was healthy: the badge may still have"
    " been in its buffer",
    Confirmation.SENT: "sent: a write-only printer took the bytes and cannot say whether"
    " the badge came out",
}


class PrinterLanguage(StrEnum):
    """The language a printer speaks: its printer family (the agent's `[printer] language`)."""

    ESCPOS = "escpos"  # Epson TM and clones: receipt paper
    ZPL = "zpl"  # Zebra ZPL II desktop label printers
    BROTHER_QL = "brother_ql"  # Brother QL raster label printers
