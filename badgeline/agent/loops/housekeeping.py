"""Journal upkeep beside the print path: start-up recovery, and pruning.

Neither may stop the agent when the journal cannot be written (the Pi's SD card
is full, or has gone read-only). An agent that stopped for it would be started
again by systemd into the same full card, and print nothing in between: so the
write failure is logged (`journal_failed`, with what was being written) and
tried again later, and the work gets done by itself once there is space.

A recovery that could not be written at start-up is safe to run late: until
then the earlier run's grants stay `granted`, which keeps this agent from
printing those jobs again (a new lease of one is journaled `dropped`), and
`Journal.recover` leaves this process's own grants alone.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from badgeline.agent.journal import Journal, JournalWriteError, RecoveryPlan
from badgeline.agent.retry import Backoff, sleep_unless_stopped
from badgeline.log import log_event

PRUNE_INTERVAL_S = 3600.0


async def recover_at_start(journal: Journal, printer_id: str) -> RecoveryPlan | None:
    """Classify what the earlier run left (Journal.recover); None when it cannot be written."""
    try:
        plan = await journal.recover()
    except JournalWriteError as error:
        log_event("journal_failed", logging.ERROR, printer_id=printer_id, writing="recover",
                  error=str(error))  # fmt: skip
        return None
    log_recovery(printer_id, plan)
    return plan


class Housekeeping:
    """Prunes the journal now and every `interval_s`, after a recovery still owed.

    A failed write is tried again after a back-off that starts at `retry_initial_s`
    and doubles: up to `retry_max_s` for a recovery owed (it holds results the
    coordinator waits for), up to `interval_s` for a prune (nothing waits for it,
    and a card that stays full is not worth a log line every few seconds).
    """

    def __init__(
        self,
        journal: Journal,
        *,
        printer_id: str,
        retry_initial_s: float,
        retry_max_s: float,
        recovery_owed: bool,
        on_recovered: Callable[[RecoveryPlan], None],
        interval_s: float = PRUNE_INTERVAL_S,
    ) -> None:
        self.journal = journal
        self.printer_id = printer_id
        self.recovery_owed = recovery_owed
        self.on_recovered = on_recovered
        self.interval_s = interval_s
        self.recovery_backoff = Backoff(retry_initial_s, retry_max_s)
        self.prune_backoff = Backoff(retry_initial_s, max(retry_initial_s, interval_s))

    async def run(self, stopping: asyncio.Event) -> None:
        delay_s = 0.0  # the first round at start-up
        while await sleep_unless_stopped(delay_s, stopping):
            delay_s = await self.round()

    async def round(self) -> float:
        """The recovery if still owed, then a prune; how long to wait for the next round."""
        if self.recovery_owed:
            try:
                plan = await self.journal.recover()
            except JournalWriteError as error:
                self._failed("recover", error)
                return self.recovery_backoff.next_delay()
            self.recovery_owed = False
            log_recovery(self.printer_id, plan)
            self.on_recovered(plan)
        try:
            await self.journal.prune()
        except JournalWriteError as error:
            self._failed("prune", error)
            return self.prune_backoff.next_delay()
        self.prune_backoff.reset()
        return self.interval_s

    def _failed(self, writing: str, error: JournalWriteError) -> None:
        log_event("journal_failed", logging.ERROR, printer_id=self.printer_id, writing=writing,
                  error=str(error))  # fmt: skip


def log_recovery(printer_id: str, plan: RecoveryPlan) -> None:
    for entry in plan.marked_uncertain:
        log_event("recovered_uncertain", logging.WARNING, printer_id=printer_id,
                  job_id=entry.job_id, lease_id=entry.lease_id,
                  idempotency_key=entry.payload.get("idempotency_key"),
                  correlation_id=entry.payload.get("correlation_id"))  # fmt: skip
    log_event(
        "journal_recovered",
        printer_id=printer_id,
        acks_to_send=len(plan.acks_to_send),
        marked_uncertain=len(plan.marked_uncertain),
        grants_to_retry=len(plan.grants_to_retry),
    )
