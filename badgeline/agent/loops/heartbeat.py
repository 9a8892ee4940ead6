"""The heartbeat loop: tell the coordinator, at the interval it asks for, that this
agent lives and what its printer's latest probe said (probe.py keeps that).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

import badgeline
from badgeline.agent.client import CoordinatorClient, CoordinatorRejected, CoordinatorUnavailable
from badgeline.agent.journal import Journal, JournalError
from badgeline.agent.loops.probe import PrinterWatch
from badgeline.agent.retry import (
    Backoff,
    ComebackSignal,
    OutageLog,
    sleep_unless_stopped,
    unless_stopped,
)
from badgeline.log import log_event
from badgeline.protocol.agent_models import HeartbeatRequest
from badgeline.protocol.states import Confirmation, PrinterLanguage

# The coordinator says how often to heartbeat (it counts a late beat as missed);
# a bad or hostile answer must neither flood it nor silence this printer for long.
MIN_HEARTBEAT_INTERVAL_S = 0.1
MAX_HEARTBEAT_INTERVAL_S = 60.0


def clamp_heartbeat_interval(interval_s: float) -> float | None:
    """The interval to use when the coordinator asks for `interval_s`; None: ignore the ask."""
    if not interval_s > 0:  # zero, negative or NaN: nothing sane to follow
        return None
    return min(MAX_HEARTBEAT_INTERVAL_S, max(MIN_HEARTBEAT_INTERVAL_S, interval_s))


class Heartbeat:
    """Sends the latest probe and the journal's counts every interval, through outages."""

    def __init__(
        self,
        client: CoordinatorClient,
        journal: Journal,
        watch: PrinterWatch,
        *,
        agent_id: str,
        labels: list[str],
        interval_s: float,
        backoff: Backoff,
        confirmation: Callable[[], Confirmation | None] = lambda: None,
        language: PrinterLanguage = PrinterLanguage.ESCPOS,
    ) -> None:
        self.confirmation = confirmation
        # Left out of an ESC/POS printer's beats (None): what older coordinators take.
        self.language = None if language is PrinterLanguage.ESCPOS else language
        self.client = client
        self.journal = journal
        self.watch = watch
        self.agent_id = agent_id
        self.labels = labels
        self.interval_s = interval_s
        self.backoff = backoff
        self.outage = OutageLog("heartbeat", printer_id=client.printer_id)
        self.last_answer_state: str | None = None
        self.last_attempt_at = time.monotonic()
        # After an outage the coordinator counts this printer's missed beats again
        # from the moment it is back: a beat that sleeps out its back-off while the
        # lease or ack calls already get through can get the printer declared dead.
        self._comeback = ComebackSignal(client.on_success)

    async def run(self, stopping: asyncio.Event, first_probe_timeout_s: float) -> None:
        await unless_stopped(self.watch.wait_first_probe(first_probe_timeout_s), stopping)
        while not stopping.is_set():
            if await self.beat_once():
                if not await sleep_unless_stopped(self.interval_s, stopping):
                    return
            elif not await self._comeback.back_off(self._retry_delay(), stopping):
                return

    def _retry_delay(self) -> float:
        # Never slower than the normal beat's interval, so a coordinator back from
        # an outage hears from this printer within one back-off cap.
        return max(self.interval_s, self.backoff.next_delay())

    async def beat_once(self) -> bool:
        """One heartbeat; True when the coordinator answered it."""
        self.last_attempt_at = time.monotonic()
        try:
            counts = await self.journal.counts()
        except JournalError as error:
            # A sick journal must not silence the printer's health: send without counts.
            log_event("journal_counts_failed", logging.WARNING, error=str(error),
                      printer_id=self.client.printer_id)  # fmt: skip
            counts = {}
        beat = HeartbeatRequest(
            agent_id=self.agent_id,
            version=badgeline.__version__,
            health=self.watch.latest,
            journal=counts,
            labels=self.labels,
            confirmation=self.confirmation(),
            language=self.language,
        )
        try:
            answer = await self.client.heartbeat(beat)
        except (CoordinatorUnavailable, CoordinatorRejected) as error:
            # A refusal is an answer: waking on the next answer would repeat it.
            self._comeback.coordinator_away(isinstance(error, CoordinatorUnavailable))
            self.outage.failed(str(error))
            return False
        self.outage.succeeded()
        self.backoff.reset()
        self._comeback.coordinator_answered()
        if answer.state != self.last_answer_state:
            log_event("printer_state", printer_id=self.client.printer_id,
                      state=str(answer.state), paused=answer.paused)  # fmt: skip
            self.last_answer_state = answer.state
        self._follow_interval(answer.heartbeat_interval_s)
        return True

    def _follow_interval(self, asked_s: float) -> None:
        """Beat at the coordinator's interval: it judges missed beats by its own setting."""
        interval_s = clamp_heartbeat_interval(asked_s)
        if interval_s is not None and interval_s != self.interval_s:
            log_event("heartbeat_interval_changed", printer_id=self.client.printer_id,
                      interval_s=interval_s, asked_s=asked_s, was_s=self.interval_s)  # fmt: skip
            self.interval_s = interval_s
