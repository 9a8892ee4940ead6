"""What the kiosk hands back: a ticket for each scan, and the scan's status.

A scan's life in the outbox (`delivery`): `pending` from the moment `submit`
returns until the coordinator answers; then `accepted` (it names a job, whose
state the kiosk follows: `job_state`) or `refused` (a permanent refusal, with
its code and message). Job states are strings, as the coordinator names them
(docs/architecture.md): a state a newer coordinator adds is passed through.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

# Where a job ends. `expired` is a job not started in time, where the coordinator has it.
TERMINAL_JOB_STATES = frozenset({"printed", "canceled", "failed", "expired"})


class Delivery(StrEnum):
    PENDING = "pending"
    ACCEPTED = "accepted"
    REFUSED = "refused"


class Kind(StrEnum):
    SCAN = "scan"
    REPRINT = "reprint"


@dataclass(frozen=True)
class ScanTicket:
    """Proof that a scan (or a reprint request) is in the outbox: `submit`'s answer."""

    scan_id: str
    idempotency_key: str  # a scan's key; a reprint's request_id
    attendee_id: str
    printer_target: str | None
    priority: int | None
    kind: Kind
    created_at: float
    reprint_of: str | None = None  # a reprint: the job it reprints


@dataclass(frozen=True)
class ScanStatus:
    """Where a scan is: in the outbox, refused, or a job at the coordinator and its state."""

    scan_id: str | None  # None for a job this outbox does not hold
    kind: Kind
    attendee_id: str
    idempotency_key: str | None
    delivery: Delivery
    job_id: str | None
    job_state: str | None
    printer_id: str | None
    # Refused: why (a coordinator error code, or `pdf_lost`). Pending: why its latest
    # attempt did not get through (e.g. coordinator_away, queue_full), if one was made.
    error_code: str | None
    error_message: str | None
    reprint_of: str | None
    created_at: float | None
    updated_at: float | None
    # The coordinator's whole answer (GET /v1/jobs/{id}) when status() read it now.
    job: dict[str, Any] | None = field(default=None, compare=False)

    @property
    def finished(self) -> bool:
        """Nothing more will happen to it: refused, or its job ended."""
        return self.delivery is Delivery.REFUSED or self.job_state in TERMINAL_JOB_STATES

    @property
    def printed(self) -> bool:
        return self.job_state == "printed"


@dataclass(frozen=True)
class ScanRecord:
    """One row of the outbox, without its PDF."""

    seq: int
    scan_id: str
    kind: Kind
    attendee_id: str
    printer_target: str | None
    priority: int | None
    idempotency_key: str
    pdf_sha256: str | None
    reprint_of: str | None
    reason: str | None
    delivery: Delivery
    job_id: str | None
    job_state: str | None
    printer_id: str | None
    error_code: str | None
    error_message: str | None
    created_at: float
    updated_at: float
    # When the job entered `job_state`, in ms of the coordinator's clock (its history
    # and events say): what tells a late report of an older state from a newer one.
    # None while unknown (the submission's answer does not say).
    job_state_at_ms: int | None = None

    def ticket(self) -> ScanTicket:
        return ScanTicket(
            self.scan_id, self.idempotency_key, self.attendee_id, self.printer_target,
            self.priority, self.kind, self.created_at, self.reprint_of,
        )  # fmt: skip

    def status(self, job: dict[str, Any] | None = None) -> ScanStatus:
        return ScanStatus(
            self.scan_id, self.kind, self.attendee_id, self.idempotency_key, self.delivery,
            self.job_id, self.job_state, self.printer_id, self.error_code, self.error_message,
            self.reprint_of, self.created_at, self.updated_at, job,
        )  # fmt: skip
