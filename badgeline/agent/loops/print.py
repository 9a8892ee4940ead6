"""The print loop: grant -> journal -> print -> confirm -> journal -> ack, for every badge.

The order is the whole point (invariants 5 and 6):

1. ask the coordinator for the start grant; a refusal is journaled `dropped`
   and the badge is never printed;
2. journal the grant (fsynced) before a single byte goes to the printer, so
   that after a power cut the agent knows this badge may have printed;
3. send the badge's bytes (in its printer's language, printers/family.py); a
   write that fails within the badge is journaled `failed`, one that fails only
   after its cut is `uncertain`;
4. confirm: wait for the printer's own word that the badge is out: its answer
   to a GS ( H process ID request, which it sends only once the badge is on
   paper (printers/completion.py), a Zebra's `~HS` with no label left, a
   Brother QL's "printing completed" (printers/zpl/, printers/brother_ql/);
   a fault, silence or no answer in time leaves the badge `uncertain`: it may
   have died in the printer's buffer, or come out. The agent never prints it
   again on its own; the coordinator's `uncertain_policy` decides.
   With `print_confirmation = "status"` (printers without GS ( H), a healthy
   DLE EOT status right after the bytes confirms it instead: a weaker proof,
   since a slow printer still holds the badge in its buffer then. With
   `"sent"` (write-only printers, asked nothing), the printer's taking every
   byte confirms it: the weakest, stated per printer (GET /v1/printers);
5. journal the result, then hand it to the ack outbox.

Steps 2-5 are one critical section: a stop waits for it to finish (within
its grace period). Steps 3-4 also hold the printer lock, which a local test
print (the status endpoint's POST /test-print) takes too: its bytes can never
land between a badge's last byte and that badge's confirmation.

Pipelining (`depth` > 1, on a printer that answers GS ( H): steps 1-3 of the
next badge run while the badges before it are printing, each badge followed by
its own process ID request, and step 4 confirms them in the order they went.
The printer never waits for the agent between badges. When a badge is not
confirmed, every badge behind it is `uncertain` too (a fault clears the
printer's buffer, or not), and a badge granted but not yet sent is `failed`:
no byte of it reached the printer.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections import deque

from badgeline.agent.client import CoordinatorClient
from badgeline.agent.journal import Journal
from badgeline.agent.loops.ack import AckOutbox
from badgeline.agent.loops.confirmation import ConfirmationPolicy
from badgeline.agent.loops.grant import GrantedBadge, StartGrants
from badgeline.agent.loops.probe import PrinterWatch, can_print
from badgeline.agent.loops.renew import LeaseKeeper
from badgeline.agent.loops.results import ResultRecorder
from badgeline.agent.metrics import PrintMetrics
from badgeline.agent.prepare import JobTicket, PreparedBadge
from badgeline.agent.printers import AsyncPrinterLink, MarkNotSentError, PrinterLinkError
from badgeline.agent.printers.completion import (
    DEFAULT_POLL_S,
    Completion,
    Outcome,
)
from badgeline.agent.retry import Backoff, unless_stopped
from badgeline.agent.slots import JobSlots
from badgeline.log import log_event
from badgeline.protocol.states import AckResult, Confirmation

# While a pipelined printer has room for another badge and one is being granted, the
# confirmation is polled at least this often, so that badge is written soon.
PIPELINE_POLL_S = 0.05
# How often a write-only printer's take of a badge is looked at (an ioctl, no I/O).
SENT_POLL_S = 0.05


class PrintLoop:
    """Prints prepared badges from `queue` in the order they were leased.

    Two coroutines: one asks for the start grants and journals them, one owns the
    printer. With `depth` > 1 (and a printer proven to answer GS ( H) the printer's
    owner writes the next granted badge while earlier ones are still printing, and
    confirms them in order; the grant of the next badge is asked for meanwhile.
    """

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
        depth: int = 1,
        keeper: LeaseKeeper | None = None,
        metrics: PrintMetrics | None = None,
    ) -> None:
        self.metrics = metrics or PrintMetrics()
        self.link = link
        self.watch = watch
        self.outbox = outbox
        self.slots = slots
        self.queue = queue
        self.printer_lock = printer_lock
        self.policy = ConfirmationPolicy(confirmation, link, client.printer_id)
        self.results = ResultRecorder(journal, client)
        self.grants = StartGrants(client=client, journal=journal, watch=watch,
                                  results=self.results, backoff=backoff, keeper=keeper)  # fmt: skip
        self.confirm_timeout_s = confirm_timeout_s
        self.depth = depth
        # Granted badges not yet finished: at most `_depth_now()` of them.
        self._unfinished = 0
        self._room = asyncio.Condition()
        self._to_send: asyncio.Queue[GrantedBadge | None] = asyncio.Queue()
        self.in_flight: deque[GrantedBadge] = deque()
        self._holding_printer = False

    @property
    def current(self) -> JobTicket | None:
        """The oldest granted badge not finished (for a stop that runs out of time)."""
        return self.in_flight[0].ticket if self.in_flight else None

    async def run(self, stopping: asyncio.Event) -> None:
        async with asyncio.TaskGroup() as group:
            group.create_task(self._drive_printer())
            try:
                await self._grant_loop(stopping)
            finally:
                # Once granted, a badge is printed and its result journaled; the
                # printer's owner ends after the last one. Only a stop past its
                # grace period cancels this, and the grants then stay journaled:
                # the next start reports them uncertain.
                self._to_send.put_nowait(None)

    # ------------------------------------------------------------ grants

    async def _grant_loop(self, stopping: asyncio.Event) -> None:
        while not stopping.is_set():
            badge = await unless_stopped(self.queue.get(), stopping)
            if badge is None:
                return
            if not await unless_stopped(self._wait_for_room(), stopping):
                await self.slots.give_back()  # left `leased`: the next start asks again
                return
            self._unfinished += 1
            granted = await self.grants.granted(badge, stopping)
            if granted is None:
                await self._free_place()
            else:
                self._to_send.put_nowait(granted)

    # ------------------------------------------------------------ the printer

    async def _drive_printer(self) -> None:
        """Write granted badges and confirm them in order, until the grant loop is done."""
        done = False
        while not done or self.in_flight:
            if not self.in_flight:
                granted = await self._to_send.get()
                if granted is None:
                    return
                await self.printer_lock.acquire()  # held while anything is in flight
                self._holding_printer = True
                await self._send(granted)
            while not done and len(self.in_flight) < self._depth_now():
                if self._to_send.empty():
                    break
                if (granted := self._to_send.get_nowait()) is None:
                    done = True
                else:
                    await self._send(granted)
            if self.in_flight:
                await self._confirm_oldest()
            if not self.in_flight and self._holding_printer:
                self._holding_printer = False
                self.printer_lock.release()

    def _depth_now(self) -> int:
        """Pipeline only on a printer that confirms by GS ( H (proven, with "auto")."""
        if self.policy.pipelines():
            return self.depth
        return 1

    async def _send(self, granted: GrantedBadge) -> None:
        if not self.watch.ready:
            # The printer faulted after this badge was granted (e.g. with the badge
            # before it): nothing is sent, so the coordinator may retry it anywhere.
            reason = f"not sent: the printer cannot print ({self.watch.latest.detail})"
            await self._finish(granted, AckResult.FAILED, reason)
            log_event("print_failed", logging.WARNING, error=reason, **granted.trace())
            return
        by_printer = self.policy.by_printer()
        granted.interruptions = self.watch.interruptions
        try:
            if by_printer:
                granted.mark = await self.link.send_marked(granted.badge.data)
            else:
                await self.link.write(granted.badge.data)
        except MarkNotSentError as error:
            # The badge reached the printer whole, cut included: it may come out.
            await self._lose_in_flight(f"the printer link failed behind it: {error}")
            doubt = f"the printer took the badge, then its process ID request failed: {error}"
            await self._finish_printed_or_doubted(granted, doubt)
            self.watch.request_probe()
            return
        except PrinterLinkError as error:
            # Every byte up to the cut (the badge's last command) did not reach the
            # printer, so no finished badge came out: a failure, retried by the
            # coordinator. Badges written before it on the broken link are in doubt.
            reason = f"printer write failed: {error}"
            await self._lose_in_flight(f"the printer link failed behind it: {error}")
            await self._finish(granted, AckResult.FAILED, reason)
            log_event("print_failed", logging.WARNING, error=reason, **granted.trace())
            self.watch.request_probe()
            return
        if by_printer:
            granted.deadline = asyncio.get_running_loop().time() + self.confirm_timeout_s
            granted.last_byte = self.link.bytes_sent()
            self.in_flight.append(granted)
            return
        if self.policy.configured == "sent":
            await self._finish_printed_or_doubted(granted, await self._doubt_until_taken())
            return
        # By status: a healthy DLE EOT right after the bytes (a link that cannot
        # read cannot hear a process ID response either).
        await self._finish_printed_or_doubted(granted, await self._doubt_by_status())

    async def _doubt_until_taken(self) -> str | None:
        """A write-only printer: confirmed once it has taken every byte (on TCP, once it
        acknowledged them), in doubt if it stops taking them."""
        last_byte = self.link.bytes_sent()
        while self.link.bytes_taken() < last_byte:
            if not self.link.is_busy():
                return "the printer stopped taking the badge's bytes before it had them all"
            await asyncio.sleep(SENT_POLL_S)
        return None

    async def _doubt_by_status(self) -> str | None:
        report = await self.link.probe()  # never raises: a report, not an error
        self.watch.update(report)
        if can_print(report):
            return None
        return f"printer status after the print: {report.detail or 'not ready'}"

    async def _confirm_oldest(self) -> None:
        oldest = self.in_flight[0]
        assert oldest.mark is not None
        loop = asyncio.get_running_loop()
        pause_s = min(oldest.pause_s, max(0.0, oldest.deadline - loop.time()))
        if len(self.in_flight) < self._depth_now() and self._unfinished > len(self.in_flight):
            pause_s = min(pause_s, PIPELINE_POLL_S)  # a badge being granted goes out soon
        completion = await self.link.poll_printed(oldest.mark, pause_s)
        if completion is None:
            if loop.time() < self._confirm_deadline(oldest):
                longest = self.link.family.longest_confirm_poll_s or DEFAULT_POLL_S
                oldest.pause_s = min(2 * oldest.pause_s, longest)
                return
            completion = Completion(
                Outcome.TIMED_OUT,
                f"no process ID response within {self.confirm_timeout_s:g} s of the printer"
                " taking the last byte, though it is online",
            )
        self.in_flight.popleft()
        await self.policy.learn(completion)
        if completion.printed:
            await self._finish_printed_or_doubted(oldest, None)
            return
        if completion.outcome is Outcome.UNSUPPORTED:
            # The link cannot read replies after all: confirm by status instead.
            await self._finish_printed_or_doubted(oldest, await self._doubt_by_status())
            return
        self.watch.update(await self.link.probe())
        await self._finish_printed_or_doubted(oldest, self.policy.doubt(completion))
        doubt = (f"sent behind badge {oldest.ticket.job_id}, which was not confirmed: "
                 f"{completion.detail}")  # fmt: skip
        if completion.outcome is not Outcome.TIMED_OUT:
            await self._lose_in_flight(doubt)
            return
        # Online now, yet no answer: a fault the agent did not see may have cleared
        # the printer's buffer, taking the start of the badge behind with it while
        # that badge's own request, arriving later, is still answered (a CI run lost
        # a badge so). So the badges behind are in doubt too, except those sent after
        # the agent saw the printer fault: that fault explains the lost request (a
        # chaos run reprinted such a badge, printed and answered, needlessly).
        while self.in_flight and self.in_flight[0].interruptions <= oldest.interruptions:
            await self._finish_printed_or_doubted(self.in_flight.popleft(), doubt)

    def _confirm_deadline(self, granted: GrantedBadge) -> float:
        """Until when the badge may take to come out: `confirm_timeout_s` after it was
        sent, or after the printer took its last byte, whichever is later.

        A slow printer (a card printer takes 30 s a badge) with a badge or two
        still in the agent's send queue is printing them: the clock starts once
        it has taken the whole badge, not when the agent wrote it. Until then
        the polls tell a printer that still takes our bytes from one that
        stalled (poll_process_id: SILENT).
        """
        if self.link.bytes_taken() < granted.last_byte:
            return math.inf
        loop = asyncio.get_running_loop()
        if granted.taken_at is None:
            granted.taken_at = loop.time()
        return max(granted.deadline, granted.taken_at + self.confirm_timeout_s)

    async def _lose_in_flight(self, doubt: str) -> None:
        """Every badge still in flight: its fate is unknown (the printer may clear its buffer)."""
        while self.in_flight:
            await self._finish_printed_or_doubted(self.in_flight.popleft(), doubt)

    async def _finish_printed_or_doubted(self, granted: GrantedBadge, doubt: str | None) -> None:
        if doubt is None:
            await self._finish(granted, AckResult.PRINTED, None)
            log_event("badge_printed", bytes=len(granted.badge.data), **granted.trace())
        else:
            await self._finish(granted, AckResult.UNCERTAIN, doubt)
            log_event("print_uncertain", logging.WARNING, error=doubt, **granted.trace())

    async def _finish(self, granted: GrantedBadge, result: AckResult, reason: str | None) -> None:
        """Journal the result, hand it to the outbox, and free the badge's place."""
        self.metrics.record(result, time.monotonic() - granted.granted_at)
        try:
            await self.results.record(granted.ticket, result, reason, granted.fence)
        finally:
            self.outbox.notify()
            await self._free_place()

    async def _wait_for_room(self) -> bool:
        async with self._room:
            await self._room.wait_for(lambda: self._unfinished < self._depth_now())
        return True

    async def _free_place(self) -> None:
        self._unfinished -= 1
        async with self._room:
            self._room.notify_all()
        await self.slots.give_back()

    def confirmation_in_use(self) -> Confirmation | None:
        """How badges are confirmed now (None: "auto", not learned from a badge yet)."""
        return self.policy.in_use()
