"""Turn a leased job into the ESC/POS bytes of its badge, or into the reason it cannot print.

Fetching and rasterising happen here, before any start grant is asked for:
a badge that cannot be printed must never hold a grant (the coordinator
would think it is printing), and the next badge is prepared while the
current one prints, which is where the time goes on a Pi.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from badgeline.agent.badge import BadgeLimits, BadgeRejected, BadgeRenderWorker
from badgeline.agent.fetch import BadgeFetcher, FetchRefused
from badgeline.agent.journal import JournalEntry
from badgeline.coordinator.events import log_event

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class JobTicket:
    """One lease of one job as the agent handles it, with what its log lines need."""

    printer_id: str
    job_id: str
    lease_id: str
    payload: dict[str, Any]

    @classmethod
    def from_entry(cls, printer_id: str, entry: JournalEntry) -> JobTicket:
        return cls(printer_id, entry.job_id, entry.lease_id, dict(entry.payload))

    @property
    def correlation_id(self) -> str | None:
        value = self.payload.get("correlation_id")
        return value if isinstance(value, str) else None

    @property
    def badge_pdf_ref(self) -> str:
        return str(self.payload.get("badge_pdf_ref", ""))

    def trace(self) -> dict[str, Any]:
        """The fields every job log line carries (ARCHITECTURE invariant 8)."""
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
    escpos: bytes


class BadgeUnprintable(Exception):
    """The badge cannot be printed; `reason` becomes the failed ack's error."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


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
    ) -> None:
        self.fetcher = fetcher
        self.width_dots = width_dots
        self.limits = limits
        self.footer = footer
        self._worker = BadgeRenderWorker(limits) if in_sandbox else None

    async def start(self) -> None:
        if self._worker is not None:
            # Spawn now, so the first badge does not pay for it; this returns at
            # once, and the worker loads PDFium while the agent goes on starting.
            await asyncio.to_thread(self._worker.start)

    async def close(self) -> None:
        if self._worker is not None:
            await asyncio.to_thread(self._worker.close)

    async def prepare(self, ticket: JobTicket) -> PreparedBadge:
        """The badge's ESC/POS bytes; `BadgeUnprintable` with the reason otherwise."""
        try:
            pdf = await self.fetcher.fetch(ticket.badge_pdf_ref)
        except FetchRefused as refused:
            raise BadgeUnprintable(f"badge PDF unavailable: {refused.reason}") from None
        log_event("badge_fetched", logging.DEBUG, pdf_bytes=len(pdf), **ticket.trace())
        footer_job_id = ticket.job_id if self.footer else None
        try:
            escpos = await asyncio.to_thread(self._render, pdf, footer_job_id)
        except BadgeRejected as rejected:
            raise BadgeUnprintable(
                f"badge PDF rejected ({rejected.reason_code.value}): {rejected.message}"
            ) from None
        except (ValueError, RuntimeError) as error:
            # A bad width or a render worker that could not start: the badge did
            # not print, and the coordinator must hear why.
            log.warning("rendering %s failed", ticket.job_id, exc_info=True)
            raise BadgeUnprintable(f"badge could not be rendered: {error}") from None
        log_event(
            "badge_prepared", logging.DEBUG, bytes=len(escpos), pdf_bytes=len(pdf), **ticket.trace()
        )
        return PreparedBadge(ticket, escpos)

    def _render(self, pdf: bytes, footer_job_id: str | None) -> bytes:
        if self._worker is not None:
            return self._worker.badge_to_escpos(pdf, self.width_dots, footer_job_id)
        from badgeline.agent.badge.raster import badge_to_escpos

        return badge_to_escpos(pdf, self.width_dots, footer_job_id, self.limits)
