"""The lease loop: long-poll for jobs, journal each lease, prepare its badge, queue it.

The loop holds at most `prefetch` jobs (the one printing and the next), so
the next badge is fetched and rasterised while the current one prints, but
jobs are not hoarded: an agent that leases more than it can print soon holds
work its peers could print, until those leases expire.

It does not lease while the printer cannot print (offline, cover open, out of
paper): the jobs then stay queued on the coordinator, where its failover can
move them, instead of waiting here for a printer that may not come back.

A new lease's badge is fetched and rasterised while the lease is being
journaled (an fsync): neither has any effect outside this process, and the
print loop asks for the start grant only for a badge that is both journaled
and prepared. On an idle printer that takes the journal write off the way
from scan to print.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

from badgeline.agent.client import (
    CoordinatorClient,
    CoordinatorRejected,
    CoordinatorUnavailable,
    UnreadableJob,
)
from badgeline.agent.journal import Journal, JournalEntry, JournalError, LocalJobState
from badgeline.agent.loops.ack import AckOutbox
from badgeline.agent.loops.probe import PrinterWatch
from badgeline.agent.loops.renew import LeaseKeeper
from badgeline.agent.prepare import BadgePreparer, BadgeUnprintable, JobTicket, PreparedBadge
from badgeline.agent.retry import Backoff, OutageLog, sleep_unless_stopped, unless_stopped
from badgeline.agent.slots import JobSlots
from badgeline.log import log_event
from badgeline.protocol.agent_models import LeasedJob
from badgeline.protocol.failures import FailureReason

log = logging.getLogger(__name__)

# An empty answer quicker than this is not a long-poll (the coordinator caps the
# wait at 0, or this agent asked for none): pause this long so it is no tight loop.
MIN_EMPTY_POLL_S = 0.25
# How long a new lease waits for this agent's own earlier result of the same job
# to be confirmed (see `_after_own_results_confirmed`).
OWN_ACK_WAIT_S = 5.0


class LeaseLoop:
    def __init__(
        self,
        *,
        client: CoordinatorClient,
        journal: Journal,
        preparer: BadgePreparer,
        watch: PrinterWatch,
        outbox: AckOutbox,
        slots: JobSlots,
        queue: asyncio.Queue[PreparedBadge],
        lease_wait_s: float,
        backoff: Backoff,
        recovered: list[JournalEntry],
        keeper: LeaseKeeper | None = None,
    ) -> None:
        self.keeper = keeper
        self.client = client
        self.journal = journal
        self.preparer = preparer
        self.watch = watch
        self.outbox = outbox
        self.slots = slots
        self.queue = queue
        self.lease_wait_s = lease_wait_s
        self.backoff = backoff
        self.outage = OutageLog("lease", printer_id=client.printer_id)
        self._recovered = list(recovered)

    async def run(self, stopping: asyncio.Event) -> None:
        await self._resume_recovered(stopping)
        while not stopping.is_set():
            await unless_stopped(self.watch.wait_ready(), stopping)
            free = await unless_stopped(self.slots.wait_free(), stopping)
            if free is None or stopping.is_set():
                return
            jobs = await self._lease(free, stopping)
            for job in jobs or []:
                self.slots.take()
                if isinstance(job, UnreadableJob):
                    ticket = JobTicket(self.client.printer_id, job.job_id, job.lease_id,
                                       job.payload, job.lease_ttl_s)  # fmt: skip
                    await self._as_the_jobs_problem(ticket, self._refuse(ticket, job))
                    continue
                ticket = JobTicket(self.client.printer_id, job.job_id, job.lease_id,
                                   job.job.model_dump(mode="json"), job.lease_ttl_s)  # fmt: skip
                await self._as_the_jobs_problem(ticket, self._take(ticket, stopping))

    async def _resume_recovered(self, stopping: asyncio.Event) -> None:
        """Leases journaled before a restart but never granted: try for their grant first."""
        while self._recovered and not stopping.is_set():
            entry = self._recovered.pop(0)
            if await unless_stopped(self.slots.wait_free(), stopping) is None:
                return
            self.slots.take()
            ticket = JobTicket.from_entry(self.client.printer_id, entry)
            log_event("lease_resumed", **ticket.trace())
            if self.keeper is not None:
                self.keeper.hold(ticket)
            await self._as_the_jobs_problem(ticket, self._prepare_and_queue(ticket, stopping))

    async def _as_the_jobs_problem(
        self, ticket: JobTicket, handling: Coroutine[Any, Any, None]
    ) -> None:
        """Run one job's handling; a fault in it fails that job, never this loop.

        Whatever a kiosk sent, or a damaged journal handed back, must not stop
        the agent: a loop that died here would die again on the same lease at
        every start, and failover would carry the job to the next printer's agent.
        """
        try:
            await handling
        except Exception:
            log.exception("handling lease %s of %s failed", ticket.lease_id, ticket.job_id)
            await self._fail_before_grant(
                ticket, FailureReason.INTERNAL,
                "the agent could not handle this job (see the agent's log)",
            )  # fmt: skip

    async def _lease(
        self, free: int, stopping: asyncio.Event
    ) -> list[LeasedJob | UnreadableJob] | None:
        asked_at = asyncio.get_running_loop().time()
        try:
            jobs = await unless_stopped(self.client.lease(self.lease_wait_s, free), stopping)
        except (CoordinatorUnavailable, CoordinatorRejected) as error:
            self.outage.failed(str(error))
            await sleep_unless_stopped(self.backoff.next_delay(), stopping)
            return None
        self.outage.succeeded()
        self.backoff.reset()
        answered_in = asyncio.get_running_loop().time() - asked_at
        if jobs == [] and answered_in < MIN_EMPTY_POLL_S:
            await sleep_unless_stopped(MIN_EMPTY_POLL_S - answered_in, stopping)
        return jobs

    async def _take(self, ticket: JobTicket, stopping: asyncio.Event) -> None:
        preparing = asyncio.ensure_future(self.preparer.prepare(ticket))
        try:
            await self._after_own_results_confirmed(ticket)
            entry = await self.journal.record_lease(ticket.job_id, ticket.lease_id, ticket.payload)
        except JournalError as error:
            # Without a journaled lease there is no safe print; the coordinator
            # takes the job back when the lease expires.
            _abandon(preparing)
            log_event("journal_failed", logging.ERROR, writing="record_lease", error=str(error),
                      **ticket.trace())  # fmt: skip
            await self.slots.give_back()
            await sleep_unless_stopped(self.backoff.next_delay(), stopping)
            return
        except BaseException:
            _abandon(preparing)
            raise
        if entry.state is not LocalJobState.LEASED:
            _abandon(preparing)
            log_event("lease_not_printed", logging.WARNING, state=str(entry.state),
                      reason=entry.error, **ticket.trace())  # fmt: skip
            await self.slots.give_back()
            return
        log_event("lease_journaled", **ticket.trace())
        if self.keeper is not None:
            self.keeper.hold(ticket)  # until its start is asked for (print.py)
        await self._queue_when_prepared(ticket, preparing, stopping)

    async def _after_own_results_confirmed(self, ticket: JobTicket) -> None:
        """Let the outbox record the confirmation of this job's earlier result first.

        The coordinator re-queues a job the moment it records a `failed` or
        `uncertain` ack, and this agent's long-poll can lease it again before
        the ack's answer reaches the outbox. The journal would then see an
        unconfirmed `uncertain` lease and refuse the new one, and the job
        would sit leased here until its lease expired.
        """
        if not await self.outbox.wait_until_confirmed(ticket.job_id, OWN_ACK_WAIT_S):
            log_event("earlier_result_unconfirmed", logging.WARNING, **ticket.trace())

    async def _prepare_and_queue(self, ticket: JobTicket, stopping: asyncio.Event) -> None:
        preparing = asyncio.ensure_future(self.preparer.prepare(ticket))
        await self._queue_when_prepared(ticket, preparing, stopping)

    async def _queue_when_prepared(
        self, ticket: JobTicket, preparing: asyncio.Future[PreparedBadge], stopping: asyncio.Event
    ) -> None:
        """Queue the badge for the print loop once prepared; a journaled lease only."""
        try:
            badge = await preparing
        except BadgeUnprintable as unprintable:
            await self._fail_before_grant(ticket, unprintable.reason, unprintable.message)
            return
        # A stop while the queue is full leaves the job `leased` in the journal:
        # the next start asks for its grant again.
        await unless_stopped(self.queue.put(badge), stopping)

    async def _refuse(self, ticket: JobTicket, job: UnreadableJob) -> None:
        """A job whose payload does not validate here fails, journaled like any other.

        A bad badge reference can never print; any other field is more likely a
        coordinator newer than this agent, so that failure is retried (perhaps by
        another printer's agent) rather than final.
        """
        try:
            await self.journal.record_lease(ticket.job_id, ticket.lease_id, ticket.payload)
        except JournalError as error:
            log_event("journal_failed", logging.ERROR, writing="record_lease", error=str(error),
                      **ticket.trace())  # fmt: skip
            await self.slots.give_back()  # the lease expires; the coordinator takes it back
            return
        reason = (FailureReason.BAD_REFERENCE if job.fields == ("badge_pdf_ref",)
                  else FailureReason.INTERNAL)  # fmt: skip
        await self._fail_before_grant(ticket, reason, f"this agent cannot read the job: "
                                                      f"{job.problem}")  # fmt: skip

    async def _fail_before_grant(
        self, ticket: JobTicket, reason: FailureReason, message: str
    ) -> None:
        """A badge that cannot print needs no grant; the coordinator hears why through an ack."""
        if self.keeper is not None:
            self.keeper.release(ticket.lease_id)
        log_event("badge_unprintable", logging.WARNING, reason=str(reason), error=message,
                  **ticket.trace())  # fmt: skip
        try:
            await self.journal.record_failed(ticket.job_id, ticket.lease_id, message, reason)
        except JournalError as error:
            log_event("journal_failed", logging.ERROR, writing="record_failed", error=str(error),
                      **ticket.trace())  # fmt: skip
        else:
            self.outbox.notify()
        await self.slots.give_back()


def _abandon(preparing: asyncio.Future[PreparedBadge]) -> None:
    """Drop a badge being prepared for a lease that will not print."""
    preparing.cancel()
    # If it had already finished with a refusal, retrieve that, so asyncio does
    # not log it as an exception nobody looked at.
    preparing.add_done_callback(lambda done: done.cancelled() or done.exception())
