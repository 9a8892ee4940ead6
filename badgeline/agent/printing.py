"""The print loop: grant -> journal -> print -> confirm -> journal -> ack, one badge at a time.

The order is the whole point (invariants 5 and 6):

1. ask the coordinator for the start grant; a refusal is journaled `dropped`
   and the badge is never printed;
2. journal the grant (fsynced) before a single byte goes to the printer, so
   that after a power cut the agent knows this badge may have printed;
3. send the ESC/POS bytes; a write that fails is journaled `failed`;
4. confirm: wait for the printer's answer to a GS ( H process ID request,
   which it sends only once the badge is on paper (printers/completion.py);
   a fault, silence or no answer in time leaves the badge `uncertain`: it may
   have died in the printer's buffer, or come out. The agent never prints it
   again on its own; the coordinator's `uncertain_policy` decides.
   With `print_confirmation = "status"` (printers without GS ( H), a healthy
   DLE EOT status right after the bytes confirms it instead: a weaker proof,
   since a slow printer still holds the badge in its buffer then;
5. journal the result, then hand it to the ack outbox.

Steps 2-5 are one critical section: a stop waits for it to finish (within
its grace period). Steps 3-4 also hold the printer lock, which a local test
print (the status endpoint's POST /test-print) takes too: its bytes can never
land between a badge's last byte and that badge's confirmation.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from badgeline.agent.client import CoordinatorClient, CoordinatorRejected, CoordinatorUnavailable
from badgeline.agent.health import PrinterWatch, can_print
from badgeline.agent.journal import Journal, JournalError
from badgeline.agent.outbox import AckOutbox, clip_error
from badgeline.agent.prepare import JobTicket, PreparedBadge
from badgeline.agent.printers import AsyncPrinterLink, PrinterLinkError
from badgeline.agent.printers.completion import Completion, Outcome
from badgeline.agent.retry import Backoff, OutageLog, sleep_unless_stopped, unless_stopped
from badgeline.coordinator.events import log_event
from badgeline.protocol.models import AckRequest, PrinterHealthReport, StartResponse
from badgeline.protocol.states import AckResult


class JobSlots:
    """How many jobs the agent holds (leased, not yet finished): the prefetch bound.

    The lease loop takes a slot per leased job; the print loop gives it back
    when the job is finished (printed, failed, dropped or abandoned).
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self.taken = 0
        self._changed = asyncio.Condition()

    @property
    def free(self) -> int:
        return max(0, self.size - self.taken)

    async def wait_free(self) -> int:
        async with self._changed:
            await self._changed.wait_for(lambda: self.free > 0)
            return self.free

    def take(self) -> None:
        self.taken += 1

    async def give_back(self) -> None:
        self.taken -= 1
        async with self._changed:
            self._changed.notify_all()


class PrintLoop:
    """Prints prepared badges from `queue` in the order they were leased."""

    def __init__(
        self,
        *,
        client: CoordinatorClient,
        journal: Journal,
        link: AsyncPrinterLink,
        watch: PrinterWatch,
        outbox: AckOutbox,
        slots: JobSlots,
        queue: asyncio.Queue[PreparedBadge],
        backoff: Backoff,
        printer_lock: asyncio.Lock,
        confirmation: str = "auto",
        confirm_timeout_s: float = 30.0,
    ) -> None:
        self.client = client
        self.journal = journal
        self.link = link
        self.watch = watch
        self.outbox = outbox
        self.slots = slots
        self.queue = queue
        self.backoff = backoff
        self.printer_lock = printer_lock
        self.outage = OutageLog("start", printer_id=client.printer_id)
        self.confirmation = confirmation
        self.confirm_timeout_s = confirm_timeout_s
        # With "auto": whether the printer answers GS ( H, once a badge has shown it.
        self.process_id_support: bool | None = None
        # The granted badge being printed, if any (for a stop that runs out of time).
        self.current: JobTicket | None = None

    async def run(self, stopping: asyncio.Event) -> None:
        while not stopping.is_set():
            badge = await unless_stopped(self.queue.get(), stopping)
            if badge is None:
                return
            try:
                await self.print_one(badge, stopping)
            finally:
                await self.slots.give_back()

    async def print_one(self, badge: PreparedBadge, stopping: asyncio.Event) -> None:
        ticket = badge.ticket
        await unless_stopped(self.watch.wait_ready(), stopping)
        if stopping.is_set():
            return  # left `leased` in the journal: the next start asks for the grant again
        decision = await self._ask_for_start(ticket, stopping)
        if decision is None:
            return
        if not decision.granted:
            reason = decision.reason or "refused"
            await self.journal.record_dropped(ticket.job_id, ticket.lease_id, reason)
            log_event("start_refused", logging.WARNING, reason=reason, **ticket.trace())
            return
        # Not interruptible by a stop: once granted, the badge is printed and its
        # result journaled. Only a stop past its grace period cancels this, and
        # the grant then stays journaled: the next start reports it uncertain.
        self.current = ticket
        try:
            await self._print_granted(badge, decision.fence or 0)
        finally:
            self.current = None

    async def _ask_for_start(
        self, ticket: JobTicket, stopping: asyncio.Event
    ) -> StartResponse | None:
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
            except CoordinatorUnavailable as error:
                problem = str(error)
            else:
                self.outage.succeeded()
                self.backoff.reset()
                return decision
            self.outage.failed(problem)
            if not await sleep_unless_stopped(self.backoff.next_delay(), stopping):
                return None
        return None

    async def _print_granted(self, badge: PreparedBadge, fence: int) -> None:
        ticket = badge.ticket
        trace: dict[str, Any] = {**ticket.trace(), "fence": fence}
        try:
            await self.journal.record_grant(ticket.job_id, ticket.lease_id, fence)
        except JournalError as error:
            # No journaled grant, no print (invariant 5). The coordinator holds the
            # job as printing: tell it directly, since the outbox lives in the journal.
            reason = f"journal write failed before printing: {error}"
            log_event("journal_failed", logging.ERROR, error=reason, **trace)
            await self._ack_without_journal(ticket, AckResult.FAILED, reason, fence)
            return
        try:
            async with self.printer_lock:
                by_process_id = self._confirms_by_process_id()
                await self.link.write(badge.escpos)
                completion = (
                    await self.link.await_printed(self.confirm_timeout_s) if by_process_id else None
                )
                report = await self.link.probe()  # never raises: a report, not an error
        except PrinterLinkError as error:
            # Every byte up to the cut (the last command) did not reach the
            # printer, so no finished badge came out: a failure, retried by the
            # coordinator.
            reason = f"printer write failed: {error}"
            await self._record_result(ticket, AckResult.FAILED, reason, fence)
            log_event("print_failed", logging.WARNING, error=reason, **trace)
            self.watch.request_probe()
            self.outbox.notify()
            return
        self.watch.update(report)
        if completion is not None:
            self._learn_support(completion)
        doubt = self._doubt(completion, report)
        if doubt is None:
            await self._record_result(ticket, AckResult.PRINTED, None, fence)
            log_event("badge_printed", bytes=len(badge.escpos), **trace)
        else:
            await self._record_result(ticket, AckResult.UNCERTAIN, doubt, fence)
            log_event("print_uncertain", logging.WARNING, error=doubt, **trace)
        self.outbox.notify()

    def _confirms_by_process_id(self) -> bool:
        if self.confirmation == "auto":
            return self.process_id_support is not False
        return self.confirmation == "process_id"

    def _learn_support(self, completion: Completion) -> None:
        """With "auto": the first response proves GS ( H works; a printer that stayed
        online through a whole timeout without ever answering does not know it."""
        if self.confirmation != "auto" or self.process_id_support is not None:
            return
        if completion.printed:
            self.process_id_support = True
            log_event("print_confirmation", printer_id=self.client.printer_id, by="process_id")
        elif completion.outcome is Outcome.TIMED_OUT:
            self.process_id_support = False
            log_event("print_confirmation", logging.WARNING, printer_id=self.client.printer_id,
                      by="status", reason="the printer does not answer GS ( H")  # fmt: skip

    def _doubt(self, completion: Completion | None, report: PrinterHealthReport) -> str | None:
        """Why the badge may not have come out; None when it is confirmed printed."""
        if completion is None or completion.outcome is Outcome.UNSUPPORTED:
            # By status: a write-only link cannot hear a process ID response either.
            if can_print(report):
                return None
            return f"printer status after the print: {report.detail or 'not ready'}"
        if completion.printed:
            return None
        if completion.outcome is Outcome.TIMED_OUT:
            hint = 'a printer without GS ( H needs print_confirmation = "status"'
            printer_id = self.client.printer_id
            log_event("print_confirmation_timed_out", logging.WARNING,
                      printer_id=printer_id, detail=completion.detail, hint=hint)  # fmt: skip
        return f"not confirmed printed: {completion.detail}"

    async def _record_result(
        self, ticket: JobTicket, result: AckResult, reason: str | None, fence: int
    ) -> None:
        job_id, lease_id = ticket.job_id, ticket.lease_id
        try:
            if result is AckResult.PRINTED:
                await self.journal.record_printed(job_id, lease_id)
            elif result is AckResult.FAILED:
                await self.journal.record_failed(job_id, lease_id, reason or "failed")
            else:
                await self.journal.record_uncertain(job_id, lease_id, reason or "uncertain")
        except JournalError as error:
            # The badge is a physical fact the journal could not keep: report it
            # now, or a restart would call it uncertain and print it again.
            log_event("journal_failed", logging.ERROR, error=str(error), result=str(result),
                      **ticket.trace())  # fmt: skip
            await self._ack_without_journal(ticket, result, reason, fence)

    async def _ack_without_journal(
        self, ticket: JobTicket, result: AckResult, reason: str | None, fence: int
    ) -> None:
        """Best effort, once: the journal cannot hold this result for the outbox."""
        request = AckRequest(
            lease_id=ticket.lease_id, result=result, error=clip_error(reason), fence=fence
        )
        try:
            await self.client.ack(ticket.job_id, request, correlation_id=ticket.correlation_id)
        except (CoordinatorUnavailable, CoordinatorRejected) as error:
            log_event("ack_lost", logging.ERROR, result=str(result), problem=str(error),
                      **ticket.trace())  # fmt: skip
