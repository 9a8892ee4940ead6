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
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from badgeline.emulator.label import Label
from badgeline.emulator.language import HeadView, PageWatcher, Sheet
from badgeline.emulator.record import PrintedBadge, PrinterCounters, job_ids_in, save_picture
from badgeline.emulator.state import PrinterCondition

__all__ = ["DEFAULT_BUFFER_BYTES", "PrintHead", "PrintedBadge", "PrinterCounters", "job_ids_in"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class _QueuedPage:
    page: Sheet
    connection: int
    size: int  # receive-buffer bytes it holds until it is out
    # Printing it had done while it was still arriving (see _PrintingAhead).
    head_start_s: float = 0.0
    started_at: float | None = None
    watcher: PageWatcher | None = None
    # The copies of one ZPL format (^PQ) share a batch: the labels remaining in it.
    batch: object = None


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
        self._batches: Counter[object] = Counter()  # copies waiting, per batch
        self._current: _QueuedPage | None = None
        self._changed = asyncio.Event()
        self._switched_off = False
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
        """Room to read into, once there is some; 0 once the printer is switched off."""
        while not (room := self.room()) and not self._switched_off:
            await self._changed.wait()
        return 0 if self._switched_off else room

    def switch_off(self) -> None:
        """No connection reads any more: the ones waiting for room end now."""
        self._switched_off = True
        self.notify()

    def switch_on(self) -> None:
        self._switched_off = False

    def submit(
        self,
        page: Sheet,
        connection: int,
        size: int,
        watcher: PageWatcher | None = None,
        copies: int = 1,
    ) -> None:
        """A cut page, `size` bytes of the buffer (its connection no longer counts them),
        to print `copies` times (each copy one label, holding its share of the bytes)."""
        ahead, self._ahead = self._ahead, None
        head_start_s, started_at, drained = 0.0, None, 0
        if ahead is not None:
            # The head was already on it: what it printed has left the buffer.
            drained = min(size, math.floor(ahead.drained))
            head_start_s, started_at = ahead.printed_s, ahead.started_at
        self._page_bytes = max(1, size // copies)
        batch = object()
        left = size - drained
        for copy in range(copies):
            share = left // copies + (1 if copy < left % copies else 0)
            queued = _QueuedPage(page, connection, share, head_start_s if copy == 0 else 0.0,
                                 started_at if copy == 0 else None, watcher, batch)  # fmt: skip
            self._queued_bytes += queued.size
            self.queued += 1
            self._batches[batch] += 1
            self._queue.put_nowait(queued)
        self.notify()

    def view(self) -> HeadView:
        """The head as a status answer reports it."""
        current = self._current.batch if self._current is not None else None
        remaining = self._batches.get(current, 0) + (1 if current is not None else 0)
        waiting = sum(1 for batch in self._batches if batch is not current)
        return HeadView(formats_waiting=waiting, labels_remaining=remaining,
                        buffer_full=self.room() == 0, printing=self.printing)  # fmt: skip

    def submit_process_id(
        self, process_id: bytes, connection: int, reply: Callable[[bytes], None]
    ) -> None:
        """Answer with `reply(response)` once everything submitted before is out."""
        self._queue.put_nowait(_ProcessIdRequest(process_id, connection, reply))
        self.notify()

    def discard(
        self, page: Sheet, connection: int, reason: str, watcher: PageWatcher | None = None
    ) -> None:
        self.counters.discarded += 1
        job_ids = job_ids_in(page.text)
        logger.warning("connection %d: page for %s not printed: %s", connection, job_ids, reason)
        if watcher is not None:
            watcher.lost(page)
        self.notify()

    def flush(self, reason: str) -> None:
        """A fault cleared the buffer: discard every waiting page, drop every waiting request."""
        self._ahead = None
        while not self._queue.empty():
            item = self._queue.get_nowait()
            if isinstance(item, _QueuedPage):
                self._dequeued(item)
                self.discard(item.page, item.connection, reason, item.watcher)
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
            self._current = queued
            self._printing_left = queued.size
            self.notify()
            try:
                await self._print(queued)
            except Exception:
                # One bad page must not stop the printer for every later badge.
                logger.exception("connection %d: printing a page failed", queued.connection)
            finally:
                self.printing = False
                self._current = None
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
                if self.condition.held:
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
        self._batches[queued.batch] -= 1
        if self._batches[queued.batch] <= 0:
            del self._batches[queued.batch]

    async def _thawed(self) -> None:
        """While held (frozen, or a fault the printer keeps its buffer through) the head
        stands still, holding what it has."""
        while self.condition.held:
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
        if queued.watcher is not None:
            queued.watcher.started(queued.page)
        if await self._fault_struck_within(queued):
            # The badge was still going through the printer: it is ruined.
            reason = f"{self.condition.fault} while printing"
            self.discard(queued.page, queued.connection, reason, queued.watcher)
            return
        at = time.time()
        sequence = next(self._sequence)
        job_ids = job_ids_in(queued.page.text)
        if len(job_ids) > 1:
            logger.warning("one page carries several job footers %s: one print", job_ids)
        job_id = job_ids[-1] if job_ids else None
        path = self.out_dir / f"{sequence:06d}-{job_id or 'no-job'}.png"
        width = self.condition.media.width_dots
        raster, png = await asyncio.to_thread(save_picture, queued.page, path, width)
        page = queued.page
        badge = PrintedBadge(sequence, job_id, at, png, raster, page.text, queued.connection,
                             started_at)  # fmt: skip
        self.printed.append(badge)
        logger.info("printed #%d job_id=%s png=%s", sequence, job_id, png)
        if queued.watcher is not None:
            queued.watcher.printed(page)
        self.notify()

    async def _fault_struck_within(self, queued: _QueuedPage) -> bool:
        """Print for the current `ms_per_badge`, releasing the page's buffer bytes as it goes.

        `head_start_s` of it were printed while it arrived. A speed change applies
        to the page on the head too (setting 0 finishes it). Stops early, True, if
        the printer faults meanwhile and the page is lost.
        """
        size, head_start_s = queued.size, queued.head_start_s
        loop = asyncio.get_running_loop()
        started = loop.time() - head_start_s
        while not self._faulted():
            if self.condition.frozen:
                # The page stops where it is, and goes on from there once thawed.
                frozen_at = loop.time()
                await self._thawed()
                started += loop.time() - frozen_at
                continue
            if self.condition.held:
                # An error the printer keeps its buffer through (a Zebra's paper out):
                # the label it was on comes out part printed, and is printed again
                # once the error clears (^JZY, the default), or not at all (^JZN).
                if not (isinstance(queued.page, Label) and queued.page.reprint_after_error):
                    return True
                self.discard(queued.page, queued.connection, f"{self.condition.fault} while "
                             "printing; printed again once it clears")  # fmt: skip
                await self._thawed()
                started, head_start_s = loop.time(), 0.0
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
