"""The ack outbox loop: deliver every journaled result until the coordinator confirms it.

Results live in the journal's outbox, not in memory: a result survives the
agent's restart and any length of coordinator outage (invariant 6). Acks are
idempotent on the coordinator, so sending one twice (the answer was lost) is
harmless. The loop backs off while the coordinator is away and logs the
outage once, not once per attempt; and it stops backing off as soon as any
other call to the coordinator succeeds (a heartbeat, a lease), so results
go out the moment the coordinator is back, not up to a back-off cap later.

A journal that cannot be written (a full or read-only SD card) does not stop
the loop. A confirmation it cannot mark ends the flush and backs off like an
outage: the ack stays in the outbox, is sent again later (the coordinator
answers a repeat the same way) and is marked once the journal takes writes.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from badgeline.agent.client import CoordinatorClient, CoordinatorRejected, CoordinatorUnavailable
from badgeline.agent.journal import Journal, JournalWriteError, LocalJobState, PendingAck
from badgeline.agent.retry import Backoff, ComebackSignal, OutageLog
from badgeline.log import log_event
from badgeline.protocol.agent_models import MAX_ERROR_TEXT, AckRequest
from badgeline.protocol.states import AckResult

BATCH = 32
# The outbox also looks on its own this often, in case a wake-up was missed.
IDLE_RECHECK_S = 5.0


class AckOutbox:
    """Sends pending acks in the order the results happened."""

    def __init__(self, client: CoordinatorClient, journal: Journal, backoff: Backoff) -> None:
        self.client = client
        self.journal = journal
        self.backoff = backoff
        self.outage = OutageLog("ack", printer_id=client.printer_id)
        self._new_result = asyncio.Event()
        self._confirmed = asyncio.Condition()
        # Ends the back-off when the coordinator answers some call after an ack found it away.
        self._comeback = ComebackSignal(client.on_success)

    def notify(self) -> None:
        """A result was journaled: send it now rather than at the next recheck."""
        self._new_result.set()

    async def run(self, stopping: asyncio.Event) -> None:
        while not stopping.is_set():
            if await self.flush():
                await self._wait_for_news(stopping)
            elif not await self._back_off(stopping):
                return

    async def flush(self) -> bool:
        """Send every pending ack; True when the outbox is empty (or only holds the hopeless)."""
        self._new_result.clear()
        while pending := await self.journal.pending_acks(BATCH):
            for ack in pending:
                if not await self._deliver(ack):
                    return False
        return True

    async def wait_until_confirmed(self, job_id: str, timeout_s: float) -> bool:
        """Wait until no result of `job_id` waits in the outbox; False after `timeout_s`."""
        try:
            async with asyncio.timeout(timeout_s), self._confirmed:
                while await self._has_pending(job_id):
                    await self._confirmed.wait()
        except TimeoutError:
            return False
        return True

    async def _has_pending(self, job_id: str) -> bool:
        history = await self.journal.history(job_id)
        return any(entry.state in _AWAITING_ACK for entry in history)

    async def _back_off(self, stopping: asyncio.Event) -> bool:
        """Wait out the back-off, or less if the coordinator is back; False if stopping."""
        return await self._comeback.back_off(self.backoff.next_delay(), stopping)

    async def _wait_for_news(self, stopping: asyncio.Event) -> None:
        waits = [asyncio.ensure_future(self._new_result.wait()), asyncio.ensure_future(
            stopping.wait())]  # fmt: skip
        try:
            await asyncio.wait(waits, timeout=IDLE_RECHECK_S, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()

    async def _deliver(self, pending: PendingAck) -> bool:
        entry = await self.journal.get(pending.job_id, pending.lease_id)
        payload = entry.payload if entry is not None else {}
        trace: dict[str, Any] = {
            "printer_id": self.client.printer_id,
            "job_id": pending.job_id, "lease_id": pending.lease_id,
            "idempotency_key": payload.get("idempotency_key"),
            "correlation_id": payload.get("correlation_id"),
        }  # fmt: skip
        request = AckRequest(
            lease_id=pending.lease_id,
            result=pending.result,
            error=clip_error(pending.error),
            fence=pending.fence,
            reason=pending.reason if pending.result is AckResult.FAILED else None,
        )
        try:
            answer = await self.client.ack(
                pending.job_id, request, correlation_id=trace["correlation_id"]
            )
        except CoordinatorUnavailable as error:
            return await self._failed(pending, str(error), trace, coordinator_away=True)
        except CoordinatorRejected as rejected:
            if rejected.status != 404:
                # The coordinator answered: waking on its next answer would only
                # repeat the refusal, so this one waits out the whole back-off.
                return await self._failed(pending, str(rejected), trace, coordinator_away=False)
            # The coordinator has no such job (its store was reset): no retry can
            # ever land, and keeping it would block every later ack.
            log_event("ack_abandoned", logging.ERROR, result=str(pending.result),
                      problem=str(rejected), **trace)  # fmt: skip
        else:
            log_event("ack_confirmed", result=str(pending.result), state=str(answer.state),
                      recorded=answer.recorded, attempts=pending.attempts + 1, **trace)  # fmt: skip
        self.outage.succeeded()
        self._comeback.coordinator_answered()
        if not await self._marked(pending, trace):
            return False
        self.backoff.reset()  # only now: a confirmation it cannot mark is no progress
        async with self._confirmed:
            self._confirmed.notify_all()
        return True

    async def _marked(self, pending: PendingAck, trace: dict[str, Any]) -> bool:
        """Leave the outbox; False when the journal cannot be written."""
        try:
            await self.journal.mark_acked(pending.job_id, pending.lease_id)
        except JournalWriteError as error:
            # Carrying on would read the same ack again and resend it in a tight
            # loop. Back off instead, the whole delay: the coordinator answered, so
            # its next answer to another loop is no reason to try sooner.
            self._comeback.coordinator_away(False)
            log_event("journal_failed", logging.ERROR, writing="mark_acked", error=str(error),
                      result=str(pending.result), **trace)  # fmt: skip
            return False
        return True

    async def _failed(
        self, pending: PendingAck, problem: str, trace: dict[str, Any], *, coordinator_away: bool
    ) -> bool:
        # Only answers after this failure count as the coordinator coming back.
        self._comeback.coordinator_away(coordinator_away)
        self.outage.failed(problem)
        try:
            await self.journal.record_ack_attempt(pending.job_id, pending.lease_id)
        except JournalWriteError as error:
            # Only a count of failed deliveries: the ack itself is still owed.
            log_event("journal_failed", logging.ERROR, writing="record_ack_attempt",
                      error=str(error), **trace)  # fmt: skip
        return False


_AWAITING_ACK = frozenset({LocalJobState.PRINTED, LocalJobState.FAILED, LocalJobState.UNCERTAIN})


def clip_error(error: str | None) -> str | None:
    """Fit an error text into an ack (the API caps it)."""
    if error is None or len(error) <= MAX_ERROR_TEXT:
        return error
    return error[: MAX_ERROR_TEXT - 1] + "…"
