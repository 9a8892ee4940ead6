"""The printer probe loop: ask the printer for its status, keep the latest report.

The probe is its own loop, apart from the heartbeat (heartbeat.py): a silent
printer makes a status probe wait out its timeout (seconds), and a heartbeat
must not wait for that, or the coordinator would count a slow probe as a dead
agent. The probe keeps the latest report in a `PrinterWatch`; the heartbeat
sends whatever is latest, and the print loop waits on it for a printer that can
print.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from badgeline.agent.printers import AsyncPrinterLink
from badgeline.agent.printers.realtime_status import is_busy_report
from badgeline.agent.retry import (
    unless_stopped,
)
from badgeline.log import log_event
from badgeline.protocol.agent_models import PrinterHealthReport
from badgeline.protocol.states import PaperLevel

NOT_PROBED_YET = PrinterHealthReport(reachable=False, detail="not probed yet")


def can_print(report: PrinterHealthReport) -> bool:
    """Whether a badge sent now would come out: reachable, closed, not jammed, has paper
    (and, on a label printer, ribbon, and is not paused)."""
    return (
        report.reachable
        and not report.jammed
        and not report.cover_open
        and report.paper is not PaperLevel.OUT
        and not report.paused
        and report.ribbon_pct != 0
    )


class PrinterWatch:
    """The latest probe of the printer, and a way to wait until it can print."""

    def __init__(self, printer_id: str) -> None:
        self.printer_id = printer_id
        self.latest = NOT_PROBED_YET
        self.probed_at: float | None = None  # wall-clock time of `latest`
        self.started_monotonic = time.monotonic()
        self._ready = asyncio.Event()
        self._probed = asyncio.Event()
        self._probe_requested = asyncio.Event()
        # Times the printer was seen going from ready to not ready: a fault that may
        # have cleared its receive buffer (the print loop compares these).
        self.interruptions = 0

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    def update(self, report: PrinterHealthReport) -> None:
        was_ready, previous = self.ready, self.latest
        self.latest = report
        self.probed_at = time.time()
        self._probed.set()
        if can_print(report):
            self._ready.set()
        else:
            self._ready.clear()
            if was_ready:
                self.interruptions += 1
        # A busy printer is no news: logging every badge's "busy" and back is noise.
        news = previous.detail != report.detail and not (
            is_busy_report(previous) or is_busy_report(report)
        )
        if was_ready != self.ready or news:
            level = logging.INFO if self.ready else logging.WARNING
            log_event(
                "printer_ready" if self.ready else "printer_not_ready",
                level,
                printer_id=self.printer_id,
                reachable=report.reachable,
                jammed=report.jammed,
                cover_open=report.cover_open,
                paper=str(report.paper),
                detail=report.detail,
            )

    async def wait_ready(self) -> None:
        await self._ready.wait()

    async def wait_first_probe(self, timeout_s: float) -> None:
        """Wait (at most `timeout_s`) until the printer has been probed once.

        A heartbeat sent before that would report "unreachable" for a printer
        nobody has looked at yet, and the coordinator counts that as a failure.
        """
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout_s):
                await self._probed.wait()

    def request_probe(self) -> None:
        """Probe again now, not at the next interval (e.g. after a failed write)."""
        self._probe_requested.set()

    async def wait_probe_request(self, timeout_s: float) -> None:
        try:
            async with asyncio.timeout(timeout_s):
                await self._probe_requested.wait()
        except TimeoutError:
            return
        self._probe_requested.clear()


async def probe_forever(
    link: AsyncPrinterLink, watch: PrinterWatch, interval_s: float, stopping: asyncio.Event
) -> None:
    """Query the printer's status every interval (or when asked) and publish the result."""
    while not stopping.is_set():
        # probe() never raises: an unreachable printer is a report, not an error.
        watch.update(await link.probe())
        await unless_stopped(watch.wait_probe_request(interval_s), stopping)
