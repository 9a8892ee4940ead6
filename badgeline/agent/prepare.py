"""Turn a leased job into its badge's printer bytes, or into the reason it cannot print.

The bytes are in the printer's language (printers/family.py): ESC/POS from the
render worker, or a label printer's (ZPL, Brother QL raster) encoded here from
the label's dots the worker rendered, the badge fitted to the label.

Fetching and rasterising happen here, before any start grant is asked for:
a badge that cannot be printed must never hold a grant (the coordinator
would think it is printing), and the next badge is prepared while the
current one prints, which is where the time goes on a Pi.

The render worker (badge/sandbox.py, ~23 MB with PDFium and Pillow) runs only
while badges come: the first badge spawns it, while its PDF is fetched, and
it exits after `worker_idle_s` without one, so an idle agent is one process.
That first badge pays for the worker's start (~0.2 s here, more on a Pi).
With `worker_idle_s = 0` the worker starts with the agent and stays.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any

from badgeline.agent.badge_threads import ThreadWatch, badge_thread, preparing_until
from badgeline.agent.client import CoordinatorClient
from badgeline.agent.config import AgentSettings
from badgeline.agent.fetch import BadgeFetcher, FetchRefused
from badgeline.agent.journal import JournalEntry
from badgeline.agent.printers.family import LabelLengthUnknown, PrinterFamily
from badgeline.agent.sources import BadgeSources
from badgeline.badge import BadgeLimits, BadgeRejected, BadgeRenderWorker
from badgeline.badge.layout import LabelLayout
from badgeline.log import log_event
from badgeline.protocol.failures import FailureReason

log = logging.getLogger(__name__)

# The time one badge may take to be fetched, checked and rendered, unless the
# agent's `badge_budget_s` says otherwise (and never more than half its lease).
DEFAULT_BUDGET_S = 10.0
MIN_BUDGET_S = 1.0


@dataclass(frozen=True)
class JobTicket:
    """One lease of one job as the agent handles it, with what its log lines need."""

    printer_id: str
    job_id: str
    lease_id: str
    payload: dict[str, Any]
    # How long the coordinator keeps the lease (None: unknown, a lease from the journal).
    lease_ttl_s: float | None = None

    @classmethod
    def from_entry(cls, printer_id: str, entry: JournalEntry) -> JobTicket:
        return cls(printer_id, entry.job_id, entry.lease_id, dict(entry.payload))

    @property
    def correlation_id(self) -> str | None:
        value = self.payload.get("correlation_id")
        return value if isinstance(value, str) else None

    @property
    def badge_pdf_ref(self) -> str:
        value = self.payload.get("badge_pdf_ref")
        return value if isinstance(value, str) else ""

    def trace(self) -> dict[str, Any]:
        """The fields every job log line carries (invariant 8, docs/architecture.md)."""
        return {
            "printer_id": self.printer_id,
            "job_id": self.job_id,
            "lease_id": self.lease_id,
            "idempotency_key": self.payload.get("idempotency_key"),
            "correlation_id": self.correlation_id,
        }


@dataclass(frozen=True)
class PreparedBadge:
    ticket: JobTicket
    data: bytes  # the badge in its printer's language


class BadgeUnprintable(Exception):
    """The badge cannot be printed: `reason` classifies why, `message` becomes the ack's error."""

    def __init__(self, reason: FailureReason, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


class BadgePreparer:
    """Fetch, check and rasterise badges; blocking work runs in threads (or the sandbox)."""

    def __init__(
        self,
        fetcher: BadgeFetcher,
        *,
        width_dots: int,
        limits: BadgeLimits,
        footer: bool,
        in_sandbox: bool,
        worker_idle_s: float = 0.0,
        budget_s: float = DEFAULT_BUDGET_S,
        family: PrinterFamily | None = None,
    ) -> None:
        self.fetcher = fetcher
        # The printer's language: ESC/POS renders at the paper's width in the worker,
        # a label printer gets the label's dots from the worker and encodes them here.
        self.family = family
        self.budget_s = budget_s
        self.width_dots = width_dots
        self.limits = limits
        self.footer = footer
        self.worker_idle_s = worker_idle_s
        self._worker = BadgeRenderWorker(limits) if in_sandbox else None
        self._preparing = 0
        # The threads working for badges, each with its badge's deadline (see `overdue_s`).
        self.threads = ThreadWatch()
        self._idle_timer: asyncio.TimerHandle | None = None
        self._idle_exit: asyncio.Task[None] | None = None

    @property
    def worker_pid(self) -> int | None:
        """The render worker's process id while one runs (None in-process or while idle)."""
        return self._worker.pid if self._worker is not None else None

    async def start(self) -> None:
        if self._worker is not None and not self.worker_idle_s:
            # Kept for the agent's life: spawn now, so the first badge does not pay
            # for it. This returns at once; the worker loads PDFium meanwhile.
            await asyncio.to_thread(self._worker.start)

    async def close(self) -> None:
        if self._idle_timer is not None:
            self._idle_timer.cancel()
        if self._idle_exit is not None:
            await self._idle_exit
        if self._worker is not None:
            await asyncio.to_thread(self._worker.close)

    async def prepare(self, ticket: JobTicket) -> PreparedBadge:
        """The badge's ESC/POS bytes; `BadgeUnprintable` with the reason otherwise.

        Never anything else: whatever goes wrong while a job is prepared is that
        job's failure, never the agent's. The whole preparation (fetch, checks,
        render) has one time budget, well inside the job's lease.
        """
        self._preparing += 1
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None
        budget_s = self.budget_for(ticket)
        try:
            with preparing_until(self.threads, time.monotonic() + budget_s):
                async with asyncio.timeout(budget_s) as budget:
                    if self._worker is not None and self._worker.pid is None:
                        # Spawned now, so that it loads PDFium while the PDF is fetched.
                        await badge_thread(self._worker.start)
                    return await self._prepare(ticket)
        except BadgeUnprintable:
            raise
        except TimeoutError:
            if not budget.expired():
                raise _internal(ticket) from None
            raise BadgeUnprintable(
                FailureReason.FETCH_TIMEOUT,
                f"the badge was not fetched and rendered within its {budget_s:g} s budget",
            ) from None
        except Exception:
            raise _internal(ticket) from None
        finally:
            self._preparing -= 1
            if self._preparing == 0 and self._worker is not None and self.worker_idle_s:
                loop = asyncio.get_running_loop()
                self._idle_timer = loop.call_later(self.worker_idle_s, self._stop_idle_worker)

    def overdue_s(self) -> float:
        """How far the oldest blocking call for a badge is past the badge's budget (0: none is).

        The budget's timeout ends every preparation in time, but not the thread of a
        call that never returns: one still running past it is stuck, and /healthz says so.
        """
        return self.threads.overdue_s()

    def budget_for(self, ticket: JobTicket) -> float:
        """The preparation's time budget: the setting, and at most half of the job's lease,
        so that a badge that takes all of it still asks for its grant in time."""
        if ticket.lease_ttl_s is None:
            return self.budget_s
        return max(MIN_BUDGET_S, min(self.budget_s, ticket.lease_ttl_s / 2))

    def _stop_idle_worker(self) -> None:
        self._idle_timer = None
        if self._worker is None or self._preparing or self._worker.pid is None:
            return
        log_event("render_worker_idle_exit", logging.DEBUG, pid=self._worker.pid,
                  idle_s=self.worker_idle_s)  # fmt: skip
        # In a thread: close() waits for the worker's lock and for the process to end.
        # A badge that comes meanwhile waits on that lock, then spawns a new worker.
        self._idle_exit = asyncio.ensure_future(asyncio.to_thread(self._worker.close))

    async def _prepare(self, ticket: JobTicket) -> PreparedBadge:
        try:
            pdf = await self.fetcher.fetch(ticket.badge_pdf_ref)
        except FetchRefused as refused:
            raise BadgeUnprintable(refused.reason, refused.message) from None
        log_event("badge_fetched", logging.DEBUG, pdf_bytes=len(pdf), **ticket.trace())
        footer_job_id = ticket.job_id if self.footer else None
        try:
            data = await badge_thread(self._render, pdf, footer_job_id)
        except BadgeRejected as rejected:
            raise BadgeUnprintable(
                FailureReason(rejected.reason_code.value), rejected.message
            ) from None
        except RuntimeError as error:
            # The render worker could not start (out of memory or processes): the
            # machine's problem, not the badge's.
            log.warning("rendering %s failed", ticket.job_id, exc_info=True)
            raise BadgeUnprintable(
                FailureReason.RENDER_UNAVAILABLE, f"the badge could not be rendered: {error}"
            ) from None
        except LabelLengthUnknown as unknown:
            raise BadgeUnprintable(FailureReason.RENDER_UNAVAILABLE, str(unknown)) from None
        log_event(
            "badge_prepared", logging.DEBUG, bytes=len(data), pdf_bytes=len(pdf), **ticket.trace()
        )
        return PreparedBadge(ticket, data)

    def _render(self, pdf: bytes, footer_job_id: str | None) -> bytes:
        layout = self.family.layout(self.footer) if self.family is not None else None
        if layout is not None:
            return self._render_label(pdf, layout, footer_job_id)
        if self._worker is not None:
            return self._worker.badge_to_escpos(pdf, self.width_dots, footer_job_id)
        from badgeline.badge.raster import badge_to_escpos

        return badge_to_escpos(pdf, self.width_dots, footer_job_id, self.limits)

    def _render_label(self, pdf: bytes, layout: LabelLayout, footer_job_id: str | None) -> bytes:
        """The badge fitted to the label by the worker, encoded in the printer's language."""
        assert self.family is not None
        footer = None if footer_job_id is None else f"job {footer_job_id}"
        if self._worker is not None:
            size, packed = self._worker.badge_to_label(pdf, layout, footer)
        else:
            from badgeline.badge.raster import render_label

            image = render_label(pdf, layout, footer, self.limits)
            size, packed = image.size, image.tobytes()
        return self.family.encode(packed, size, footer)


def _internal(ticket: JobTicket) -> BadgeUnprintable:
    """An unexpected fault while preparing a job: a bug, logged in full, that fails the job."""
    log.exception("preparing %s failed unexpectedly", ticket.job_id)
    return BadgeUnprintable(
        FailureReason.INTERNAL, "the agent could not prepare this badge (see the agent's log)"
    )


def preparer_for(
    settings: AgentSettings, client: CoordinatorClient, family: PrinterFamily | None = None
) -> tuple[BadgeFetcher, BadgePreparer]:
    """The fetcher and preparer of an agent's settings (the preparer not yet started)."""
    sources = BadgeSources(settings.printer_id, settings.badge_file_roots,
                           settings.badge_http_hosts)  # fmt: skip
    fetcher = BadgeFetcher(
        client.http, sources=sources, coordinator_url=settings.coordinator_url,
        artifact_headers=client.auth_headers, max_bytes=settings.max_pdf_bytes,
        timeout_s=settings.fetch_timeout_s, retry_initial_s=settings.retry_initial_s,
    )  # fmt: skip
    preparer = BadgePreparer(
        fetcher, width_dots=settings.effective_width_dots, limits=settings.badge_limits,
        footer=settings.footer, in_sandbox=settings.render_in_sandbox,
        worker_idle_s=settings.render_worker_idle_s, budget_s=settings.badge_budget_s,
        family=family,
    )  # fmt: skip
    return fetcher, preparer
