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

A page larger than the buffer still prints, as on a real printer, which
starts on an image before all of it has arrived: an idle head starts on the
page still arriving, at print speed (the last page's size per
`ms_per_badge`), so its bytes leave the buffer as the paper moves and the
rest comes in behind them. The page is recorded once it is cut and its
`ms_per_badge`, counted from that start, has passed.

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

    # Unix time in seconds when the head started on it (its bytes may still have
    # been arriving): from it to `at` the printer was printing this badge.
    started_at: float | None = None

    def row(self) -> dict[str, Any]:
        """The `/printed` row."""
        return {"job_id": self.job_id, "at": self.at, "started_at": self.started_at,
                "png": str(self.png) if self.png else None}  # fmt: skip


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
    # Printing it had done while it was still arriving (see _PrintingAhead).
    head_start_s: float = 0.0
    started_at: float | None = None


@dataclass
class _PrintingAhead:
    """An idle head at work on a page still arriving: how far it got."""

    started_at: float  # Unix time
    printed_s: float = 0.0  # seconds of printing done (a frozen spell does not count)
    drained: float = 0.0  # bytes of it already printed, out of the buffer


@dataclass(frozen=True)
class _ProcessIdRequest:
    process_id: bytes
    connection: int
    reply: Callable[[bytes], None]


_Queued = _QueuedPage | _ProcessIdRequest

DEFAULT_BUFFER_BYTES = 16 * 1024
# How often a slow print releases buffer space (and re-checks for a fault).
RELEASE_STEP_S = 0.05
# The size a page is taken to have while it is still arriving, before the first
# page has told: an 80 mm badge 100 mm long at 8 dots/mm, as a raster.
NOMINAL_PAGE_BYTES = 576 // 8 * 800
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
        self._ahead: _PrintingAhead | None = None
        self._page_bytes = NOMINAL_PAGE_BYTES  # the last page's size: the print speed
        self._changed = asyncio.Event()
        # PNG names keep counting across resets so no picture is overwritten.
        self._sequence = itertools.count(1)

    @property
    def held_bytes(self) -> int:
        """Bytes in the receive buffer: received, not yet printed."""
        arriving = self.receiving_bytes - self._drained_ahead()
        return math.ceil(arriving + self._queued_bytes + self._printing_left)

    def room(self) -> int:
        """How many bytes a connection may read now; 0: the buffer is full (or it is frozen)."""
        if self.condition.frozen:
            return 0
        return max(0, self.buffer_bytes - self.held_bytes)

    def _drained_ahead(self) -> float:
        return 0.0 if self._ahead is None else min(self._ahead.drained, self.receiving_bytes)

    async def wait_for_room(self) -> int:
        while not (room := self.room()):
            await self._changed.wait()
        return room

    def submit(self, page: Page, connection: int, size: int) -> None:
        """A cut page, `size` bytes of the buffer (its connection no longer counts them)."""
        ahead, self._ahead = self._ahead, None
        queued = _QueuedPage(page, connection, size)
        if ahead is not None:
            # The head was already on it: what it printed has left the buffer.
            drained = min(size, math.floor(ahead.drained))
            queued = _QueuedPage(page, connection, size - drained, ahead.printed_s,
                                 ahead.started_at)  # fmt: skip
        self._page_bytes = max(1, size)
        self._queued_bytes += queued.size
        self.queued += 1
        self._queue.put_nowait(queued)
        self.notify()

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
        self._ahead = None
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

    def uncut_gone(self) -> None:
        """Content still arriving was dropped (its connection closed before a cut)."""
        if self._ahead is not None and self.receiving_bytes <= 0:
            self._ahead = None
        self.notify()

    def cut_discarded(self) -> None:
        """The page still arriving was cut and discarded (spoiled): nothing to print ahead."""
        self._ahead = None
        self.notify()

    async def run(self) -> None:
        while True:
            await self._thawed()
            if self._queue.empty():
                if self.receiving_bytes > self._drained_ahead() and not self._faulted():
                    await self._print_ahead()
                else:
                    await self._changed.wait()
                continue
            queued = self._queue.get_nowait()
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

    async def _print_ahead(self) -> None:
        """Work on the page still arriving, at print speed, until it is cut (or a fault,
        a freeze, or nothing more arrives to print); its bytes leave the buffer."""
        loop = asyncio.get_running_loop()
        ahead = self._ahead
        if ahead is None:
            ahead = self._ahead = _PrintingAhead(started_at=time.time())
        self.printing = True
        self.notify()
        try:
            last = loop.time()
            while self._ahead is ahead and self._queue.empty() and not self._faulted():
                if self.condition.frozen:
                    return
                now = loop.time()
                seconds = self.condition.ms_per_badge / 1000
                printed = self._page_bytes * (now - last) / seconds if seconds else math.inf
                ahead.printed_s += now - last
                ahead.drained = min(self.receiving_bytes, ahead.drained + printed)
                last = now
                self.notify()
                if ahead.drained >= self.receiving_bytes:
                    return  # printed all that came: wait for more (run() waits on news)
                with contextlib.suppress(TimeoutError):
                    await self.wait_until(lambda: not self._queue.empty(), RELEASE_STEP_S)
        finally:
            self.printing = False
            self.notify()

    def _dequeued(self, queued: _QueuedPage) -> None:
        self._queued_bytes -= queued.size
        self.queued -= 1

    async def _thawed(self) -> None:
        """While frozen the head stands still, holding what it has."""
        while self.condition.frozen:
            await self._changed.wait()

    def _answer(self, request: _ProcessIdRequest) -> None:
        if not self.condition.can_print:
            # Only reachable if a fault struck after the flush; the buffer is gone.
            self.counters.process_ids_dropped += 1
            return
        self.counters.process_ids_answered += 1
        request.reply(process_id_response(request.process_id))
        self.notify()

    async def _print(self, queued: _QueuedPage) -> None:
        started_at = queued.started_at or time.time()
        if await self._fault_struck_within(queued.size, queued.head_start_s):
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
        badge = PrintedBadge(sequence, job_id, at, png, raster, page.text, queued.connection,
                             started_at)  # fmt: skip
        self.printed.append(badge)
        logger.info("printed #%d job_id=%s png=%s", sequence, job_id, png)
        self.notify()

    async def _fault_struck_within(self, size: int, head_start_s: float = 0.0) -> bool:
        """Print for the current `ms_per_badge`, releasing the page's buffer bytes as it goes.

        `head_start_s` of it were printed while it arrived. A speed change applies
        to the page on the head too (setting 0 finishes it). Stops early, True, if
        the printer faults meanwhile.
        """
        loop = asyncio.get_running_loop()
        started = loop.time() - head_start_s
        while not self._faulted():
            if self.condition.frozen:
                # The page stops where it is, and goes on from there once thawed.
                frozen_at = loop.time()
                await self._thawed()
                started += loop.time() - frozen_at
                continue
            seconds = self.condition.ms_per_badge / 1000
            left = started + seconds - loop.time()
            if left <= 0:
                break
            self._printing_left = size * min(1.0, left / max(seconds - head_start_s, 1e-9))
            self.notify()
            with contextlib.suppress(TimeoutError):
                await self.wait_until(self._faulted, min(left, RELEASE_STEP_S))
        return self._faulted()

    def _faulted(self) -> bool:
        return self.condition.clears_buffer


def _save_picture(page: Page, path: Path) -> tuple[Image.Image | None, Path | None]:
    raster = page.raster()
    try:
        render_page(page).save(path, format="PNG")
    except Exception:
        # The badge came out all the same: record it without its picture.
        logger.exception("could not save %s", path)
        return raster, None
    return raster, path
