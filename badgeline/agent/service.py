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

A journal that cannot be written (a full or read-only SD card) stops no loop
and not the start: each failed write is logged as `journal_failed` and the
work waits for space (loops/housekeeping.py, loops/ack.py). A loop that dies of
anything else stops the agent, for systemd to start it again.

A stop (SIGTERM) lets the badge being printed finish and its result be
journaled; jobs not yet granted stay `leased` in the journal for the next
start. Every journal change is one SQLite transaction, so even a stop that
runs out of time leaves each job in a state the next start understands.

Around the loops: the local status endpoint (status_endpoint.py), and mDNS (mdns.py):
the agent's own advert, and, with no coordinator_url configured, the
coordinator's, which the client follows when it moves. The mDNS goodbye is
the first thing a stop does, so the coordinator hears of it even if the stop
then runs out of time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Coroutine
from types import TracebackType
from typing import TYPE_CHECKING, Any

from badgeline.agent.client import CoordinatorClient
from badgeline.agent.config import AgentSettings
from badgeline.agent.fetch import BadgeFetcher
from badgeline.agent.journal import Journal, JournalSettings, RecoveryPlan
from badgeline.agent.liveness import find_stuck_loops
from badgeline.agent.loops.ack import AckOutbox
from badgeline.agent.loops.heartbeat import Heartbeat
from badgeline.agent.loops.housekeeping import Housekeeping, recover_at_start
from badgeline.agent.loops.lease import LeaseLoop
from badgeline.agent.loops.print import PrintLoop
from badgeline.agent.loops.probe import PrinterWatch, probe_forever
from badgeline.agent.loops.renew import LeaseKeeper
from badgeline.agent.metrics import PrintMetrics
from badgeline.agent.prepare import BadgePreparer, PreparedBadge, preparer_for
from badgeline.agent.printers import AsyncPrinterLink, link_for
from badgeline.agent.retry import Backoff
from badgeline.agent.slots import JobSlots
from badgeline.agent.status_endpoint import LastProblem, StatusServer
from badgeline.agent.supervision import LOOP_NAMES, LoopSupervisor, finish, not_running
from badgeline.agent.testprint import DiagnosticPrinter
from badgeline.log import log_event

if TYPE_CHECKING:
    # zeroconf (3.5 MB of the agent's idle RSS) loads only when mdns is on.
    from badgeline.agent.mdns import AgentMdns
    from badgeline.discovery import CoordinatorLocation

# After the loops stop, one last try to deliver results, bounded: a stop must not
# hang on a coordinator that is away (the journal keeps them for the next start).
FINAL_FLUSH_S = 3.0
FIRST_PROBE_WAIT_MAX_S = 5.0


class Agent:
    """One printer's agent. Not restartable: make a new Agent to start again."""

    def __init__(self, settings: AgentSettings) -> None:
        self.settings = settings
        # The language the printer speaks, with its media (printers/family.py): one
        # object for the agent's life, since a label printer's learned length lives there.
        self.family = settings.printer.family()
        self.watch = PrinterWatch(settings.printer_id)
        self.last_problem = LastProblem(settings.printer_id)
        self.print_metrics = PrintMetrics()  # counted by the print loop, read by /metrics
        # Held by the print loop from a badge's first byte to its confirmation
        # probe, and by a local test print: never two writers on one printer.
        self.printer_lock = asyncio.Lock()
        self.exit_code = 0
        self._supervisor = LoopSupervisor(settings.printer_id, self._crashed)
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
        self._fetcher: BadgeFetcher | None = None
        self._diagnostic: DiagnosticPrinter | None = None
        self._status: StatusServer | None = None
        self._mdns: AgentMdns | None = None
        self.recovery: RecoveryPlan | None = None
        self.heartbeat: Heartbeat | None = None
        self._started = self._stopped = False
        self._started_at = time.monotonic()

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

    @property
    def client(self) -> CoordinatorClient:
        if self._client is None:
            raise RuntimeError("the agent has not been started")
        return self._client

    @property
    def diagnostic_printer(self) -> DiagnosticPrinter:
        if self._diagnostic is None:
            raise RuntimeError("the agent has not been started")
        return self._diagnostic

    @property
    def status_port(self) -> int | None:
        """The port the status endpoint listens on (None before it does)."""
        return self._status.port if self._status is not None else None

    @property
    def confirmation(self) -> str | None:
        """How badges are confirmed printed now (process_id, status, sent; None: not known)."""
        in_use = self._print_loop.confirmation_in_use() if self._print_loop else None
        return str(in_use) if in_use is not None else None

    @property
    def uptime_s(self) -> float:
        return time.monotonic() - self._started_at

    def stuck_loops(self) -> dict[str, str]:
        """Loops that run but are stuck in a step that should have ended (liveness.py)."""
        if not self._started or self.stopping:
            return {}
        return find_stuck_loops(self.settings, self.watch, self._link, self.heartbeat,
                                self._preparer)  # fmt: skip

    def loops_not_running(self) -> list[str]:
        """Names of the loops that are not running (all of them before start and once stopping)."""
        tasks = self._work_tasks + self._background_tasks
        if not tasks or self.stopping:
            return list(LOOP_NAMES)
        return not_running(tasks)

    @property
    def mdns(self) -> AgentMdns | None:
        return self._mdns

    # ------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        if self._started:
            raise RuntimeError("an Agent starts once; make a new one")
        self._started = True
        self._started_at = self.watch.started_monotonic = time.monotonic()
        self.last_problem.attach()
        try:
            await self._open_resources()
            # Serving before printing: a status port that cannot be bound stops
            # the start before any job is leased.
            await self._start_serving()
            self._start_loops()
        except BaseException:
            await self._close_resources()
            raise
        log_event("agent_started", printer_id=self.settings.printer_id,
                  agent_id=self.settings.agent_id, coordinator_url=self.settings.coordinator_url,
                  printer=self.settings.printer.kind, language=self.settings.printer.language,
                  model=self.family.describe(), status_port=self.status_port,
                  width_dots=self.settings.effective_width_dots)  # fmt: skip

    async def wait_stop_requested(self) -> None:
        await self._stop_requested.wait()

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
        if self._client is not None:
            # Stopping before mDNS found the coordinator: calls must not wait for it.
            self._client.stop_waiting_for_discovery()
        await self._say_goodbye()
        await finish(self._work_tasks, self.settings.stop_grace_s, self._abandoned)
        self._stopping_background.set()
        await finish(self._background_tasks, FINAL_FLUSH_S, None)
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
        # None: not written (the card is full); the housekeeping loop runs it later.
        self.recovery = await recover_at_start(self._journal, settings.printer_id)
        self._client = CoordinatorClient(
            settings.coordinator_url,
            settings.printer_id,
            settings.agent_token,
            connect_timeout_s=settings.connect_timeout_s,
            request_timeout_s=settings.request_timeout_s,
            ssl_context=settings.client_ssl(),
        )
        await self._client.open()
        write_only = settings.print_confirmation == "sent"
        link = link_for(settings.printer, write_only=write_only, family=self.family)
        self._link = AsyncPrinterLink(link, self.family)
        self._diagnostic = DiagnosticPrinter(
            link=self._link, watch=self.watch, printer_lock=self.printer_lock,
            printer_id=settings.printer_id, width_dots=settings.effective_width_dots,
            family=self.family,
        )  # fmt: skip
        self._fetcher, self._preparer = preparer_for(settings, self._client, self.family)
        await self._preparer.start()

    def _backoff(self) -> Backoff:
        return Backoff(self.settings.retry_initial_s, self.settings.retry_max_s)

    def _start_loops(self) -> None:
        settings = self.settings
        client, journal, link = self._client, self._journal, self._link
        assert client is not None and journal is not None and link is not None
        assert self._preparer is not None
        self._outbox = AckOutbox(client, journal, self._backoff())
        keeper = LeaseKeeper(client)
        # Pipelined badges hold a job each besides the prefetched ones.
        slots = JobSlots(settings.prefetch + settings.print_pipeline_depth - 1)
        queue: asyncio.Queue[PreparedBadge] = asyncio.Queue(maxsize=settings.prefetch)
        self._print_loop = PrintLoop(
            client=client, journal=journal, link=link, watch=self.watch, outbox=self._outbox,
            slots=slots, queue=queue, backoff=self._backoff(), printer_lock=self.printer_lock,
            confirmation=self.family.confirmation_for(settings.print_confirmation),
            confirm_timeout_s=settings.print_confirm_timeout_s,
            depth=settings.print_pipeline_depth, keeper=keeper, metrics=self.print_metrics,
        )  # fmt: skip
        lease_loop = LeaseLoop(
            client=client, journal=journal, preparer=self._preparer, watch=self.watch,
            outbox=self._outbox, slots=slots, queue=queue, lease_wait_s=settings.lease_wait_s,
            backoff=self._backoff(),
            recovered=self.recovery.grants_to_retry if self.recovery is not None else [],
            keeper=keeper,
        )  # fmt: skip
        self.heartbeat = heartbeat = Heartbeat(
            client, journal, self.watch, agent_id=settings.agent_id, labels=settings.labels,
            interval_s=settings.heartbeat_interval_s, backoff=self._backoff(),
            confirmation=self._print_loop.confirmation_in_use, language=self.family.language,
        )  # fmt: skip
        housekeeping = Housekeeping(
            journal, printer_id=settings.printer_id, retry_initial_s=settings.retry_initial_s,
            retry_max_s=settings.retry_max_s, recovery_owed=self.recovery is None,
            on_recovered=self._recovered_late,
        )  # fmt: skip
        background = self._stopping_background
        # The first heartbeat waits for the first probe, but not for a whole silent one.
        first_probe_wait_s = min(link.probe_backstop_s, FIRST_PROBE_WAIT_MAX_S)
        self._background_tasks = [
            self._spawn("probe", probe_forever(link, self.watch, settings.probe_interval_s,
                                               background)),
            self._spawn("heartbeat", heartbeat.run(background, first_probe_wait_s)),
            self._spawn("ack-outbox", self._outbox.run(background)),
            self._spawn("housekeeping", housekeeping.run(background)),
            self._spawn("lease-keeper", keeper.run(background)),
        ]  # fmt: skip
        self._work_tasks = [
            self._spawn("print", self._print_loop.run(self._stopping_work)),
            self._spawn("lease", lease_loop.run(self._stopping_work)),
        ]

    async def _start_serving(self) -> None:
        """The status endpoint, then mDNS (whose advert names the endpoint's port)."""
        settings = self.settings
        self._status = StatusServer(self, settings.status_host, settings.status_port)
        await self._status.start()
        if not settings.mdns:
            return
        from badgeline.agent.mdns import AgentMdns

        self._mdns = AgentMdns(
            printer_id=settings.printer_id, model=settings.printer_model,
            interfaces=settings.mdns_interfaces,
            follow_coordinator=settings.coordinator_url is None, venue=settings.venue,
            on_coordinator=self._follow_coordinator,
        )  # fmt: skip
        await self._mdns.start(self._status.port)

    def _follow_coordinator(self, location: CoordinatorLocation) -> None:
        """mDNS found the coordinator, or saw it move: every later call goes there."""
        previous = self.client.base_url
        self.client.move_to(location.base_url)
        if self._fetcher is not None:
            self._fetcher.coordinator_url = location.base_url
        log_event("coordinator_found" if previous is None else "coordinator_moved",
                  logging.INFO if previous is None else logging.WARNING,
                  printer_id=self.settings.printer_id, url=location.base_url,
                  previous_url=previous, venue=location.venue)  # fmt: skip

    async def _say_goodbye(self) -> None:
        if self._mdns is None:
            return
        try:
            await self._mdns.stop()
        except Exception:  # a failed goodbye must not keep the badge in hand from finishing
            logging.getLogger(__name__).exception("stopping mDNS failed")

    def _spawn(self, name: str, loop: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        return self._supervisor.spawn(name, loop)

    def _crashed(self) -> None:
        self.exit_code = 1
        self.request_stop()

    def _recovered_late(self, plan: RecoveryPlan) -> None:
        """The start-up recovery, written once the card had room: send what it queued."""
        self.recovery = plan
        self.outbox.notify()

    def _abandoned(self) -> None:
        current = self._print_loop.current if self._print_loop else None
        if current is not None:
            log_event("stop_abandoned_print", logging.ERROR, grace_s=self.settings.stop_grace_s,
                      **current.trace())  # fmt: skip

    async def _close_resources(self) -> None:
        await self._say_goodbye()
        for closer in (self._status, self._preparer, self._link, self._client, self._journal):
            if closer is not None:
                try:
                    await closer.close()
                except Exception:  # one failing close must not leave the others open
                    logging.getLogger(__name__).exception("closing %r failed", closer)
        self.last_problem.detach()
