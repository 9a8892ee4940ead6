"""A badge's result, once the printer has had it: journaled, or reported at once.

The result of a printed (or failed, or doubted) badge is a physical fact. It is
journaled for the ack outbox; when the journal cannot be written (a full or
read-only SD card) it is sent to the coordinator directly, once, since the
outbox lives in the journal and a restart would otherwise call the badge
uncertain and print it again.
"""

from __future__ import annotations

import logging

from badgeline.agent.client import CoordinatorClient, CoordinatorRejected, CoordinatorUnavailable
from badgeline.agent.journal import Journal, JournalError
from badgeline.agent.loops.ack import clip_error
from badgeline.agent.prepare import JobTicket
from badgeline.log import log_event
from badgeline.protocol.agent_models import AckRequest
from badgeline.protocol.failures import FailureReason
from badgeline.protocol.states import AckResult


class ResultRecorder:
    """Journals each badge's result, or acks it directly when the journal fails."""

    def __init__(self, journal: Journal, client: CoordinatorClient) -> None:
        self.journal = journal
        self.client = client

    async def record(
        self, ticket: JobTicket, result: AckResult, reason: str | None, fence: int
    ) -> None:
        job_id, lease_id = ticket.job_id, ticket.lease_id
        try:
            if result is AckResult.PRINTED:
                await self.journal.record_printed(job_id, lease_id)
            elif result is AckResult.FAILED:
                # Every failure after a grant is the printer's: the badge itself was
                # fetched and rendered, so another try (or printer) may print it.
                await self.journal.record_failed(
                    job_id, lease_id, reason or "failed", FailureReason.PRINTER
                )
            else:
                await self.journal.record_uncertain(job_id, lease_id, reason or "uncertain")
        except JournalError as error:
            # The badge is a physical fact the journal could not keep: report it
            # now, or a restart would call it uncertain and print it again.
            log_event("journal_failed", logging.ERROR, writing=f"record_{result}",
                      error=str(error), result=str(result), **ticket.trace())  # fmt: skip
            failure = FailureReason.PRINTER if result is AckResult.FAILED else None
            await self.ack_without_journal(ticket, result, reason, fence, failure)

    async def ack_without_journal(
        self,
        ticket: JobTicket,
        result: AckResult,
        reason: str | None,
        fence: int,
        failure: FailureReason | None = None,
    ) -> None:
        """Best effort, once: the journal cannot hold this result for the outbox."""
        request = AckRequest(
            lease_id=ticket.lease_id, result=result, error=clip_error(reason), fence=fence,
            reason=failure,
        )  # fmt: skip
        try:
            await self.client.ack(ticket.job_id, request, correlation_id=ticket.correlation_id)
        except (CoordinatorUnavailable, CoordinatorRejected) as error:
            log_event("ack_lost", logging.ERROR, result=str(result), problem=str(error),
                      **ticket.trace())  # fmt: skip
