"""Agent: the long-running service beside one printer, owning all of its loops.

    async with Agent(settings) as agent:   # opens the journal, recovers, starts the loops
        ...
    # or, for the command line:
    exit_code = await Agent(settings).run_until_stopped()   # until request_stop()

Start-up recovery comes first, from what the journal remembers:

- results (printed, failed) never confirmed: the ack outbox sends them again;
- grants without a result: the journal marks them `uncertain` and the outbox
  reports that; the coordinator decides whether to print again (flagged
  possible_duplicate). The agent never reprints them on its own;
- leases never granted: the lease loop prepares them and asks for the grant
  again; a refusal drops them.

A stop (SIGTERM) lets the badge being printed finish and its result be
journaled; jobs not yet granted stay `leased` in the journal for the next
start. Every journal change is one SQLite transaction, so even a stop that
runs out of time leaves each job in a state the next start understands.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine
from types import TracebackType
from typing import Any

from badgeline.agent.client import CoordinatorClient
from badgeline.agent.config import AgentSettings
from badgeline.agent.fetch import BadgeFetcher
from badgeline.agent.health import Heartbeat, PrinterWatch, probe_forever
from badgeline.agent.journal import Journal, JournalSettings, RecoveryPlan
from badgeline.agent.leasing import LeaseLoop
from badgeline.agent.outbox import AckOutbox
from badgeline.agent.prepare import BadgePreparer, PreparedBadge
from badgeline.agent.printers import AsyncPrinterLink, link_for
from badgeline.agent.printing import JobSlots, PrintLoop
from badgeline.agent.retry import Backoff, sleep_unless_stopped
from badgeline.coordinator.events import log_event

# After the loops stop, one last try to deliver results, bounded: a stop must not
# hang on a coordinator that is away (the journal keeps them for the next start).
FINAL_FLUSH_S = 3.0
PRUNE_INTERVAL_S = 3600.0
FIRST_PROBE_WAIT_MAX_S = 5.0


class Agent:
    """One printer's agent. Not restartable: make a new Agent to start again."""

    def __init__(self, settings: AgentSettings) -> None:
        self.settings = settings
        self.coordinator_url = settings.require_coordinator_url()
        self.watch = PrinterWatch(settings.printer_id)
        self.exit_code = 0
        self._stop_requested = asyncio.Event()
        self._stopping_work = asyncio.Event()  # lease and print loops
        self._stopping_background = asyncio.Event()  # probe, heartbeat, outbox, housekeeping
        self._work_tasks: list[asyncio.Task[None]] = []
        self._background_tasks: list[asyncio.Task[None]] = []
        self._journal: Journal | None = None
        self._client: CoordinatorClient | None = None
        self._link: AsyncPrinterLink | None = None
        self._preparer: BadgePreparer | None = None
        self._outbox: AckOutbox | None = None
        self._print_loop: PrintLoop | None = None
        self.recovery: RecoveryPlan | None = None
        self._started = self._stopped = False

    # ------------------------------------------------------------ what tests and tools see

    @property
    def journal(self) -> Journal:
        if self._journal is None:
            raise RuntimeError("the agent has not been started")
        return self._journal

    @property
    def stopping(self) -> bool:
        """True from the moment a stop begins: no new grant is asked for after it."""
        return self._stopping_work.is_set()

    @property
    def outbox(self) -> AckOutbox:
        if self._outbox is None:
            raise RuntimeError("the agent has not been started")
        return self._outbox

    # ------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        if self._started:
            raise RuntimeError("an Agent starts once; make a new one")
        self._started = True
        try:
            await self._open_resources()
            self._start_loops()
        except BaseException:
            await self._close_resources()
            raise
        log_event("agent_started", printer_id=self.settings.printer_id,
                  agent_id=self.settings.agent_id, coordinator_url=self.coordinator_url,
                  printer=self.settings.printer.kind,
                  width_dots=self.settings.effective_width_dots)  # fmt: skip

    def request_stop(self) -> None:
        """Ask `run_until_stopped` to stop; safe from a signal handler."""
        self._stop_requested.set()

    async def run_until_stopped(self) -> int:
        """Start, run until `request_stop()` (or a loop crashes), stop; the exit code."""
        await self.start()
        try:
            await self._stop_requested.wait()
        finally:
            await self.stop()
        return self.exit_code

    async def stop(self) -> None:
        """Finish the badge being printed (within stop_grace_s), then shut down cleanly."""
        if self._stopped or not self._started:
            return
        self._stopped = True
        self._stop_requested.set()
        self._stopping_work.set()
        await _finish(self._work_tasks, self.settings.stop_grace_s, self._abandoned)
        self._stopping_background.set()
        await _finish(self._background_tasks, FINAL_FLUSH_S, None)
        if self._outbox is not None:
            with contextlib.suppress(TimeoutError, Exception):
                async with asyncio.timeout(FINAL_FLUSH_S):
                    await self._outbox.flush()
        await self._close_resources()
        log_event("agent_stopped", printer_id=self.settings.printer_id, exit_code=self.exit_code)

    async def __aenter__(self) -> Agent:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.stop()

    # ------------------------------------------------------------ wiring

    async def _open_resources(self) -> None:
        settings = self.settings
        self._journal = await Journal.open(JournalSettings(path=settings.journal_path))
        if self._journal.moved_aside is not None:
            log_event("journal_rebuilt", logging.ERROR, moved_to=str(self._journal.moved_aside))
        self.recovery = await self._journal.recover()
        await self._journal.prune()
        _log_recovery(settings.printer_id, self.recovery)
        self._client = CoordinatorClient(
            self.coordinator_url,
            settings.printer_id,
            settings.token.get_secret_value(),
            connect_timeout_s=settings.connect_timeout_s,
            request_timeout_s=settings.request_timeout_s,
        )
        await self._client.open()
        self._link = AsyncPrinterLink(link_for(settings.printer))
        fetcher = BadgeFetcher(
            self._client.session,
            coordinator_url=self.coordinator_url,
            artifact_headers=self._client.auth_headers,
            max_bytes=settings.max_pdf_bytes,
            timeout_s=settings.fetch_timeout_s,
            retry_initial_s=settings.retry_initial_s,
        )
        self._preparer = BadgePreparer(
            fetcher,
            width_dots=settings.effective_width_dots,
            limits=settings.badge_limits,
            footer=settings.footer,
            in_sandbox=settings.render_in_sandbox,
        )
        await self._preparer.start()

    def _backoff(self) -> Backoff:
        return Backoff(self.settings.retry_initial_s, self.settings.retry_max_s)

    def _start_loops(self) -> None:
        settings = self.settings
        client, journal, link = self._client, self._journal, self._link
        assert client is not None and journal is not None and link is not None
        assert self._preparer is not None and self.recovery is not None
        self._outbox = AckOutbox(client, journal, self._backoff())
        slots = JobSlots(settings.prefetch)
        queue: asyncio.Queue[PreparedBadge] = asyncio.Queue(maxsize=settings.prefetch)
        self._print_loop = PrintLoop(
            client=client, journal=journal, link=link, watch=self.watch, outbox=self._outbox,
            slots=slots, queue=queue, backoff=self._backoff(),
        )  # fmt: skip
        lease_loop = LeaseLoop(
            client=client, journal=journal, preparer=self._preparer, watch=self.watch,
            outbox=self._outbox, slots=slots, queue=queue, lease_wait_s=settings.lease_wait_s,
            backoff=self._backoff(), recovered=self.recovery.grants_to_retry,
        )  # fmt: skip
        heartbeat = Heartbeat(
            client, journal, self.watch, agent_id=settings.agent_id, labels=settings.labels,
            interval_s=settings.heartbeat_interval_s, backoff=self._backoff(),
        )  # fmt: skip
        background = self._stopping_background
        # The first heartbeat waits for the first probe, but not for a whole silent one.
        first_probe_wait_s = min(link.probe_backstop_s, FIRST_PROBE_WAIT_MAX_S)
        self._background_tasks = [
            self._spawn("probe", probe_forever(link, self.watch, settings.probe_interval_s,
                                               background)),
            self._spawn("heartbeat", heartbeat.run(background, first_probe_wait_s)),
            self._spawn("ack-outbox", self._outbox.run(background)),
            self._spawn("housekeeping", self._prune_forever(background)),
        ]  # fmt: skip
        self._work_tasks = [
            self._spawn("print", self._print_loop.run(self._stopping_work)),
            self._spawn("lease", lease_loop.run(self._stopping_work)),
        ]

    def _spawn(self, name: str, loop: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        return asyncio.create_task(self._supervised(name, loop), name=f"agent-{name}")

    async def _supervised(self, name: str, loop: Coroutine[Any, Any, None]) -> None:
        """A loop that dies of a bug stops the agent (exit code 1) so systemd restarts it.

        Restarting in-process would hide the bug; the journal makes a restart safe.
        """
        try:
            await loop
        except asyncio.CancelledError:
            raise
        except Exception as error:
            log_event("loop_crashed", logging.CRITICAL, loop=name, error=repr(error),
                      printer_id=self.settings.printer_id)  # fmt: skip
            logging.getLogger(__name__).exception("the %s loop crashed", name)
            self.exit_code = 1
            self.request_stop()

    async def _prune_forever(self, stopping: asyncio.Event) -> None:
        while await sleep_unless_stopped(PRUNE_INTERVAL_S, stopping):
            await self.journal.prune()

    def _abandoned(self) -> None:
        current = self._print_loop.current if self._print_loop else None
        if current is not None:
            log_event("stop_abandoned_print", logging.ERROR, grace_s=self.settings.stop_grace_s,
                      **current.trace())  # fmt: skip

    async def _close_resources(self) -> None:
        for closer in (self._preparer, self._link, self._client, self._journal):
            if closer is not None:
                try:
                    await closer.close()
                except Exception:  # one failing close must not leave the others open
                    logging.getLogger(__name__).exception("closing %r failed", closer)


async def _finish(tasks: list[asyncio.Task[None]], grace_s: float, on_timeout: Any) -> None:
    """Let tasks end on their own within `grace_s`, then cancel what is left."""
    if not tasks:
        return
    _, pending = await asyncio.wait(tasks, timeout=grace_s)
    if pending and on_timeout is not None:
        on_timeout()
    for task in pending:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def _log_recovery(printer_id: str, plan: RecoveryPlan) -> None:
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
