"""What the journal hands back: a job's row, a queued ack, a start-up recovery plan."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from badgeline.agent.journal.states import LocalJobState
from badgeline.protocol.failures import FailureReason
from badgeline.protocol.states import AckResult


@dataclass(frozen=True)
class JournalEntry:
    """One lease of one job, as journaled."""

    job_id: str
    lease_id: str
    state: LocalJobState
    payload: dict[str, Any]
    fence: int | None
    outcome: AckResult | None
    error: str | None
    reason: FailureReason | None
    leased_at: float
    granted_at: float | None
    printed_at: float | None
    acked_at: float | None
    updated_at: float
    ack_attempts: int

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> JournalEntry:
        return cls(
            job_id=row["job_id"],
            lease_id=row["lease_id"],
            state=LocalJobState(row["state"]),
            payload=_payload(row["payload"]),
            fence=row["fence"],
            outcome=None if row["outcome"] is None else AckResult(row["outcome"]),
            error=row["error"],
            reason=_reason(row["reason"]),
            leased_at=row["leased_at"],
            granted_at=row["granted_at"],
            printed_at=row["printed_at"],
            acked_at=row["acked_at"],
            updated_at=row["updated_at"],
            ack_attempts=row["ack_attempts"],
        )


@dataclass(frozen=True)
class PendingAck:
    """A result the coordinator has not confirmed: send it as `AckRequest` until it does."""

    seq: int
    job_id: str
    lease_id: str
    result: AckResult
    fence: int | None
    error: str | None
    reason: FailureReason | None
    queued_at: float
    attempts: int

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> PendingAck:
        return cls(
            seq=row["seq"],
            job_id=row["job_id"],
            lease_id=row["lease_id"],
            result=AckResult(row["result"]),
            fence=row["fence"],
            error=row["error"],
            reason=_reason(row["reason"]),
            queued_at=row["queued_at"],
            attempts=row["ack_attempts"],
        )


@dataclass(frozen=True)
class RecoveryPlan:
    """What the agent must do at start-up, from what the journal remembers.

    - `acks_to_send`: every unconfirmed result, oldest first (printed and failed
      results from before the restart, and the `uncertain` ones just queued).
    - `marked_uncertain`: grants that never got a result; the badge may have
      come out, so they are reported, never printed again by the agent itself.
    - `grants_to_retry`: leases journaled but never granted: ask for the start
      grant again (the coordinator may refuse: then `record_dropped`).
    """

    acks_to_send: list[PendingAck] = field(default_factory=list)
    marked_uncertain: list[JournalEntry] = field(default_factory=list)
    grants_to_retry: list[JournalEntry] = field(default_factory=list)


def _payload(text: str) -> dict[str, Any]:
    """A journaled job payload; anything that is not a JSON object reads as an empty one.

    The journal's own writes are always objects, but a card can hand back
    damaged bytes: a lease whose payload cannot be read must fail as that job
    (it has no badge reference), never stop the agent at every start.
    """
    try:
        payload = json.loads(text)
    except (TypeError, ValueError):
        return {}
    return payload if isinstance(payload, dict) else {}


def _reason(value: str | None) -> FailureReason | None:
    try:
        return None if value is None else FailureReason(value)
    except ValueError:
        return FailureReason.INTERNAL  # a code this agent does not know (a newer build wrote it)
