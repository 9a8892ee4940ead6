"""The print head and the receive buffer: one badge at a time, the only place a badge is printed.

Connections hand it cut pages and `GS ( H` process ID requests, in the order
they arrived; it waits out slow mode, checks the printer can still print at
the moment the badge would come out, then records the badge and saves its
picture. Its record is the ground truth that tests count duplicates and
losses against. A process ID request is answered when the head reaches it,
i.e. once every page received before it on any connection is out.

The receive buffer is bounded (`buffer_bytes`): the bytes of pages waiting
for the head, of the page on the head not yet printed (released evenly over
its print time), and of content still arriving, uncut. Connections stop
reading their sockets while it is full, so a sender is held back by TCP, as
by a real printer, and real-time status queries queue behind the data.
An idle head always takes a page, however large: real printers start
printing an image before all of it has arrived.

A fault that stops printing (jam, cover open, paper out, offline) empties
the buffer: the page on the head is ruined, every waiting page is discarded
and every waiting process ID request is dropped unanswered, as an Epson
printer does when it recovers from an error "after clearing the receive and
print buffers" (or is switched off and on). See `docs/api.md` (emulator).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image

from badgeline.emulator.page import Page
from badgeline.emulator.render import render_page
from badgeline.emulator.state import PrinterCondition

logger = logging.getLogger(__name__)

# The agent prints `job <job_id>` as the badge footer so a print can be traced.
JOB_FOOTER = re.compile(r"job ([A-Za-z0-9_-]{4,64})")


def job_ids_in(lines: list[str]) -> list[str]:
    return [match.group(1) for line in lines if (match := JOB_FOOTER.fullmatch(line.strip()))]


@dataclass(frozen=True)
class PrintedBadge:
    sequence: int
    job_id: str | None
    at: float  # Unix time in seconds when the badge came out
    png: Path | None  # None only if the picture could not be saved
    raster: Image.Image | None  # every raster block of the page stacked, mode "1"
    text: list[str]
    connection: int

    def row(self) -> dict[str, Any]:
        """The `/printed` row."""
        return {"job_id": self.job_id, "at": self.at, "png": str(self.png) if self.png else None}


@dataclass
class PrinterCounters:
    discarded: int = 0  # cut pages a fault kept from coming out (on arrival or mid-print)
    abandoned: int = 0  # content on a connection that closed before a cut
    status_queries: int = 0  # DLE EOT requests received, answered or not
    process_ids_answered: int = 0  # GS ( H process ID responses sent
    process_ids_dropped: int = 0  # GS ( H requests a fault cleared before they were answered
    connections: int = 0  # open now
    connections_total: int = 0

    def clear(self) -> None:
        """Zero the history; `connections` stays because those sockets are still open."""
        self.discarded = self.abandoned = self.status_queries = self.connections_total = 0
        self.process_ids_answered = self.process_ids_dropped = 0


@dataclass(frozen=True)
class _QueuedPage:
    page: Page
    connection: int
    size: int  # receive-buffer bytes it holds until it is out


@dataclass(frozen=True)
class _ProcessIdRequest:
    process_id: bytes
    connection: int
    reply: Callable[[bytes], None]


_Queued = _QueuedPage | _ProcessIdRequest

DEFAULT_BUFFER_BYTES = 16 * 1024
# How often a slow print releases buffer space (and re-checks for a fault).
RELEASE_STEP_S = 0.05
PROCESS_ID_HEADER = b"\x37\x22"


def process_id_response(process_id: bytes) -> bytes:
    return PROCESS_ID_HEADER + process_id + b"\x00"


@dataclass
class PrintHead:
    condition: PrinterCondition
    out_dir: Path
    buffer_bytes: int = DEFAULT_BUFFER_BYTES
    printed: list[PrintedBadge] = field(default_factory=list)
    counters: PrinterCounters = field(default_factory=PrinterCounters)

    def __post_init__(self) -> None:
        if self.buffer_bytes < 1:
            raise ValueError("buffer_bytes must be at least 1")
        self._queue: asyncio.Queue[_Queued] = asyncio.Queue()
        self.printing = False
        self.queued = 0  # pages waiting for the head (process ID requests not counted)
        self.receiving_bytes = 0  # uncut content on the connections
        self._queued_bytes = 0
        self._printing_left = 0.0  # bytes of the page on the head not yet on paper
        self._changed = asyncio.Event()
        # PNG names keep counting across resets so no picture is overwritten.
        self._sequence = itertools.count(1)

    @property
    def held_bytes(self) -> int:
        """Bytes in the receive buffer: received, not yet printed."""
        return self.receiving_bytes + self._queued_bytes + math.ceil(self._printing_left)

    def room(self) -> int:
        """How many bytes a connection may read now; 0: the buffer is full."""
        if not self.printing and self._queue.empty():
            return max(self.buffer_bytes, self.buffer_bytes - self.held_bytes)
        return max(0, self.buffer_bytes - self.held_bytes)

    async def wait_for_room(self) -> int:
        while not (room := self.room()):
            await self._changed.wait()
        return room

    def submit(self, page: Page, connection: int, size: int) -> None:
        self._queued_bytes += size
        self.queued += 1
        self._queue.put_nowait(_QueuedPage(page, connection, size))

    def submit_process_id(
        self, process_id: bytes, connection: int, reply: Callable[[bytes], None]
    ) -> None:
        """Answer with `reply(response)` once everything submitted before is out."""
        self._queue.put_nowait(_ProcessIdRequest(process_id, connection, reply))
        self.notify()

    def discard(self, page: Page, connection: int, reason: str) -> None:
        self.counters.discarded += 1
        job_ids = job_ids_in(page.text)
        logger.warning("connection %d: page for %s not printed: %s", connection, job_ids, reason)
        self.notify()

    def flush(self, reason: str) -> None:
        """A fault cleared the buffer: discard every waiting page, drop every waiting request."""
        while not self._queue.empty():
            item = self._queue.get_nowait()
            if isinstance(item, _QueuedPage):
                self._dequeued(item)
                self.discard(item.page, item.connection, reason)
            else:
                self.counters.process_ids_dropped += 1
        self.notify()

    def reset(self) -> None:
        self.printed.clear()
        self.counters.clear()
        self.notify()

    def notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def wait_until(self, predicate: Callable[[], bool], timeout: float) -> None:
        """Wait until `predicate()` holds after some change; TimeoutError after `timeout` s."""
        async with asyncio.timeout(timeout):
            while not predicate():
                await self._changed.wait()

    async def run(self) -> None:
        while True:
            queued = await self._queue.get()
            if isinstance(queued, _ProcessIdRequest):
                self._answer(queued)
                continue
            self._dequeued(queued)
            self.printing = True
            self._printing_left = queued.size
            self.notify()
            try:
                await self._print(queued)
            except Exception:
                # One bad page must not stop the printer for every later badge.
                logger.exception("connection %d: printing a page failed", queued.connection)
            finally:
                self.printing = False
                self._printing_left = 0
                self.notify()

    def _dequeued(self, queued: _QueuedPage) -> None:
        self._queued_bytes -= queued.size
        self.queued -= 1

    def _answer(self, request: _ProcessIdRequest) -> None:
        if not self.condition.can_print:
            # Only reachable if a fault struck after the flush; the buffer is gone.
            self.counters.process_ids_dropped += 1
            return
        self.counters.process_ids_answered += 1
        request.reply(process_id_response(request.process_id))
        self.notify()

    async def _print(self, queued: _QueuedPage) -> None:
        if await self._fault_struck_within(queued.size):
            # The badge was still going through the printer: it is ruined.
            reason = f"{self.condition.fault} while printing"
            self.discard(queued.page, queued.connection, reason)
            return
        at = time.time()
        sequence = next(self._sequence)
        job_ids = job_ids_in(queued.page.text)
        if len(job_ids) > 1:
            logger.warning("one page carries several job footers %s: one print", job_ids)
        job_id = job_ids[-1] if job_ids else None
        path = self.out_dir / f"{sequence:06d}-{job_id or 'no-job'}.png"
        raster, png = await asyncio.to_thread(_save_picture, queued.page, path)
        page = queued.page
        badge = PrintedBadge(sequence, job_id, at, png, raster, page.text, queued.connection)
        self.printed.append(badge)
        logger.info("printed #%d job_id=%s png=%s", sequence, job_id, png)
        self.notify()

    async def _fault_struck_within(self, size: int) -> bool:
        """Print for the current `ms_per_badge`, releasing the page's buffer bytes as it goes.

        A speed change applies to the page on the head too (setting 0 finishes
        it). Stops early, True, if the printer faults meanwhile.
        """
        loop = asyncio.get_running_loop()
        started = loop.time()
        while not self._faulted():
            seconds = self.condition.ms_per_badge / 1000
            left = started + seconds - loop.time()
            if left <= 0:
                break
            self._printing_left = size * left / seconds
            self.notify()
            with contextlib.suppress(TimeoutError):
                await self.wait_until(self._faulted, min(left, RELEASE_STEP_S))
        return self._faulted()

    def _faulted(self) -> bool:
        return not self.condition.can_print


def _save_picture(page: Page, path: Path) -> tuple[Image.Image | None, Path | None]:
    raster = page.raster()
    try:
        render_page(page).save(path, format="PNG")
    except Exception:
        # The badge came out all the same: record it without its picture.
        logger.exception("could not save %s", path)
        return raster, None
    return raster, path
