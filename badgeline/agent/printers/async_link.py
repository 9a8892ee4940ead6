"""AsyncPrinterLink: the asyncio face of a blocking PrinterLink.

python-escpos blocks, so every call runs in a worker thread
(``asyncio.to_thread``) and the event loop keeps serving heartbeats and leases
while a badge prints. The link's own timeouts bound each blocking step; the
probe also has a backstop, so a driver that ignores its timeout still cannot
hold up a heartbeat: the probe then reports the printer unreachable, and the
stuck call finishes in its thread, holding the link's lock so nothing else
talks to the printer meanwhile.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from functools import partial
from types import TracebackType

from badgeline.agent.printers.completion import (
    Completion,
    Outcome,
    ProcessIds,
    await_process_id,
    poll_process_id,
    process_id_request,
)
from badgeline.agent.printers.errors import (
    MarkNotSentError,
    PrinterLinkError,
    StatusUnavailableError,
)
from badgeline.agent.printers.family import EscposFamily, Mark, PrinterFamily
from badgeline.agent.printers.link import LinkIo, PrinterLink
from badgeline.agent.printers.realtime_status import (
    busy_report,
    is_busy_report,
    probe_health,
)
from badgeline.protocol.agent_models import PrinterHealthReport


class AsyncPrinterLink:
    """Async wrapper of a PrinterLink; usable as ``async with``."""

    def __init__(self, link: PrinterLink, family: PrinterFamily | None = None) -> None:
        self.link = link
        # The printer's language: its status, and how its badges are confirmed.
        self.family = family or EscposFamily()
        self._process_ids = ProcessIds()
        # The printer's last real answer, which a busy printer's report keeps.
        self._last_answer: PrinterHealthReport | None = None
        # When a probe's thread last came back (a backstop's report does not count):
        # probes that never do mean wedged threads (liveness.py).
        self.last_probe_returned = time.monotonic()

    @property
    def probe_backstop_s(self) -> float:
        return self.link.timeout_s * self.family.probe_steps + 1.0

    async def open(self) -> None:
        await asyncio.to_thread(self.link.open)

    async def write(self, data: bytes) -> None:
        await asyncio.to_thread(self.link.write, data)

    async def read_status(self, query: bytes) -> bytes | None:
        return await asyncio.to_thread(self.link.read_status, query)

    async def probe(self) -> PrinterHealthReport:
        """DLE EOT 1-4 mapped to a health report; never raises (except on cancellation).

        A printer busy with our bytes is reported as it last answered, busy
        (realtime_status.py), and at once: the look needs no thread and no lock.
        """
        if self.link.is_busy():
            return busy_report(self.link, self._last_answer)
        try:
            async with asyncio.timeout(self.probe_backstop_s):
                report = await asyncio.to_thread(
                    probe_health, self.link, self._last_answer, self.family.read_health
                )
                self.last_probe_returned = time.monotonic()
        except TimeoutError:
            return PrinterHealthReport(
                reachable=False,
                detail=f"status probe of {self.link.description} did not finish "
                f"within {self.probe_backstop_s:.0f} s",
            )
        if not is_busy_report(report):
            self._last_answer = report
        return report

    def is_busy(self) -> bool:
        return self.link.is_busy()

    def bytes_sent(self) -> int:
        """Bytes written on the current connection (see PrinterLink.bytes_taken)."""
        return self.link.bytes_sent()

    def bytes_taken(self) -> int:
        """Bytes of those the printer has taken; no I/O."""
        return self.link.bytes_taken()

    async def send_marked(self, data: bytes) -> Mark:
        """Write a badge followed by its own process ID request; returns the ID to wait for.

        For pipelined printing: the printer answers each request once everything
        before it is on paper, so the answers come in the order the badges went.
        A label printer's mark is its family's count of the answers or notices so
        far (family.py).
        """
        if not isinstance(self.family, EscposFamily):
            return await asyncio.to_thread(self.link.write_marked, data, self.family.mark)
        process_id = self._process_ids.next()
        await self.write(data)
        # A write of its own: a failure of the request alone leaves the badge whole
        # in the printer, which may print it (MarkNotSentError), while a failure
        # within the badge cut it short.
        try:
            await self.write(process_id_request(process_id))
        except PrinterLinkError as error:
            raise MarkNotSentError(str(error)) from error
        return process_id

    async def poll_printed(self, mark: Mark, pause_s: float) -> Completion | None:
        """One poll of the wait for `send_marked`'s answer (see `poll_process_id`, or the
        family's own); None: not yet. Never raises; the link is free between polls."""
        exchange: Callable[[LinkIo], Completion | None]
        if isinstance(self.family, EscposFamily):
            exchange = partial(poll_process_id, process_id=mark, pause_s=pause_s)
        else:
            exchange = partial(self.family.poll, mark=mark, pause_s=pause_s)
        return await self._completion(exchange, pause_s, "a print completion poll")

    async def answers_process_id(self, within_s: float) -> bool | None:
        """Whether the printer answers a bare GS ( H request now (nothing printing):
        True, False (online yet silent), None (cannot tell: offline, link down)."""
        exchange = partial(await_process_id, process_id=self._process_ids.next(), within_s=within_s)
        completion = await self._completion(exchange, within_s, "a GS ( H check")
        if completion is None or completion.outcome not in (Outcome.PRINTED, Outcome.TIMED_OUT):
            return None
        return completion.printed

    async def _completion(
        self, exchange: Callable[[LinkIo], Completion | None], wait_s: float, what: str
    ) -> Completion | None:
        """Run a completion exchange on the link's thread; link failures become outcomes."""
        backstop_s = wait_s + self.probe_backstop_s
        try:
            async with asyncio.timeout(backstop_s):
                return await asyncio.to_thread(self.link.converse, exchange)
        except TimeoutError:
            return Completion(Outcome.SILENT, f"{what} did not finish within {backstop_s:.0f} s")
        except StatusUnavailableError as error:
            return Completion(Outcome.UNSUPPORTED, str(error))
        except PrinterLinkError as error:
            return Completion(Outcome.LINK_LOST, str(error))

    async def close(self) -> None:
        await asyncio.to_thread(self.link.close)

    async def __aenter__(self) -> AsyncPrinterLink:
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()
