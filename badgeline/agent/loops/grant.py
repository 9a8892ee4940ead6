"""Start grants: the coordinator's word that a badge may print, journaled before any byte.

A badge is granted once, for one lease; the grant carries a fence the ack
repeats. A refusal (the job was canceled, moved or its lease expired) is
journaled `dropped` and the badge never prints. The grant is journaled (fsynced)
before a single byte goes to the printer, so that after a power cut the agent
knows this badge may have printed (invariant 5).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from badgeline.agent.client import CoordinatorClient, CoordinatorRejected, CoordinatorUnavailable
from badgeline.agent.journal import Journal, JournalError, JournalWriteError
from badgeline.agent.loops.probe import PrinterWatch
from badgeline.agent.loops.renew import LeaseKeeper
from badgeline.agent.loops.results import ResultRecorder
from badgeline.agent.prepare import JobTicket, PreparedBadge
from badgeline.agent.printers.completion import FIRST_POLL_S
from badgeline.agent.retry import Backoff, ComebackSignal, OutageLog, unless_stopped
from badgeline.log import log_event
from badgeline.protocol.agent_models import StartResponse
from badgeline.protocol.failures import FailureReason
from badgeline.protocol.states import AckResult


@dataclass
class GrantedBadge:
    """A badge whose start grant is journaled: it goes to the printer, and then is in flight."""

    badge: PreparedBadge
    fence: int
    # What its confirmation waits for, once written: its GS ( H process ID, or its
    # label printer's count of answers or notices when it went (printers/family.py).
    mark: Any = None
    deadline: float = 0.0  # loop time by which its answer must have come
    pause_s: float = FIRST_POLL_S  # the next pause between polls of its confirmation
    interruptions: int = 0  # the printer faults the agent had seen when it was sent
    # Where its bytes end in the connection's stream, and when the printer was first
    # seen to have taken them all (a slow printer takes a badge at print speed).
    last_byte: int = 0
    taken_at: float | None = None
    granted_at: float = field(default_factory=time.monotonic)  # for its print duration

    @property
    def ticket(self) -> JobTicket:
        return self.badge.ticket

    def trace(self) -> dict[str, Any]:
        return {**self.badge.ticket.trace(), "fence": self.fence}


class StartGrants:
    """Asks for each badge's start grant, through outages, and journals the answer."""

    def __init__(
        self,
        *,
        client: CoordinatorClient,
        journal: Journal,
        watch: PrinterWatch,
        results: ResultRecorder,
        backoff: Backoff,
        keeper: LeaseKeeper | None,
    ) -> None:
        self.client = client
        self.journal = journal
        self.watch = watch
        self.results = results
        self.backoff = backoff
        self.keeper = keeper
        self.outage = OutageLog("start", printer_id=client.printer_id)
        # The start call retries at once when another loop finds the coordinator back.
        self._comeback = ComebackSignal(client.on_success)

    async def granted(self, badge: PreparedBadge, stopping: asyncio.Event) -> GrantedBadge | None:
        """Ask for the start grant and journal it; None when there is nothing to print."""
        ticket = badge.ticket
        await unless_stopped(self.watch.wait_ready(), stopping)
        if stopping.is_set():
            return None  # left `leased` in the journal: the next start asks for the grant again
        decision = await self._ask(ticket, stopping)
        if decision is None:
            return None
        if self.keeper is not None:
            self.keeper.release(ticket.lease_id)  # granted: printing, no lease to keep
        if not decision.granted:
            reason = decision.reason or "refused"
            try:
                await self.journal.record_dropped(ticket.job_id, ticket.lease_id, reason)
            except JournalWriteError as error:
                # Nothing prints either way. The lease stays journaled `leased`: the
                # next start asks for its grant again and is refused again.
                log_event("journal_failed", logging.ERROR, writing="record_dropped",
                          error=str(error), **ticket.trace())  # fmt: skip
            log_event("start_refused", logging.WARNING, reason=reason, **ticket.trace())
            return None
        granted = GrantedBadge(badge, decision.fence or 0)
        try:
            await self.journal.record_grant(ticket.job_id, ticket.lease_id, granted.fence)
        except JournalError as error:
            # No journaled grant, no print (invariant 5). The coordinator holds the
            # job as printing: tell it directly, since the outbox lives in the journal.
            reason = f"journal write failed before printing: {error}"
            log_event("journal_failed", logging.ERROR, writing="record_grant", error=reason,
                      **granted.trace())  # fmt: skip
            await self.results.ack_without_journal(
                ticket, AckResult.FAILED, reason, granted.fence, FailureReason.JOURNAL
            )
            return None
        return granted

    async def _ask(self, ticket: JobTicket, stopping: asyncio.Event) -> StartResponse | None:
        """The coordinator's decision; retried through outages. None when stopping first.

        The start call is idempotent for one lease, so a retry after a lost
        answer gets the same grant (and fence) rather than a second one.
        """
        while not stopping.is_set():
            try:
                decision = await unless_stopped(
                    self.client.start(
                        ticket.job_id, ticket.lease_id, correlation_id=ticket.correlation_id
                    ),
                    stopping,
                )
            except CoordinatorRejected as rejected:
                if rejected.status == 404:
                    return StartResponse(granted=False, reason="not_found")
                problem = str(rejected)
                self._comeback.coordinator_away(False)  # it answered: wait the whole back-off
            except CoordinatorUnavailable as error:
                problem = str(error)
                self._comeback.coordinator_away()
            else:
                self.outage.succeeded()
                self.backoff.reset()
                self._comeback.coordinator_answered()
                return decision
            self.outage.failed(problem)
            if not await self._comeback.back_off(self.backoff.next_delay(), stopping):
                return None
        return None
