"""The print head: one badge at a time, the only place a badge counts as printed.

Connections hand it cut pages; it waits out slow mode, checks the printer
can still print at the moment the badge would come out, then records the
badge and saves its picture. Its record is the ground truth that tests count
duplicates and losses against.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
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
    connections: int = 0  # open now
    connections_total: int = 0

    def clear(self) -> None:
        """Zero the history; `connections` stays because those sockets are still open."""
        self.discarded = self.abandoned = self.status_queries = self.connections_total = 0


@dataclass(frozen=True)
class _QueuedPage:
    page: Page
    connection: int


@dataclass
class PrintHead:
    condition: PrinterCondition
    out_dir: Path
    printed: list[PrintedBadge] = field(default_factory=list)
    counters: PrinterCounters = field(default_factory=PrinterCounters)

    def __post_init__(self) -> None:
        self._queue: asyncio.Queue[_QueuedPage] = asyncio.Queue()
        self.printing = False
        self._changed = asyncio.Event()
        # PNG names keep counting across resets so no picture is overwritten.
        self._sequence = itertools.count(1)

    @property
    def queued(self) -> int:
        return self._queue.qsize()

    def submit(self, page: Page, connection: int) -> None:
        self._queue.put_nowait(_QueuedPage(page, connection))

    def discard(self, page: Page, connection: int, reason: str) -> None:
        self.counters.discarded += 1
        job_ids = job_ids_in(page.text)
        logger.warning("connection %d: page for %s not printed: %s", connection, job_ids, reason)
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
            self.printing = True
            self.notify()
            try:
                await self._print(queued)
            except Exception:
                # One bad page must not stop the printer for every later badge.
                logger.exception("connection %d: printing a page failed", queued.connection)
            finally:
                self.printing = False
                self.notify()

    async def _print(self, queued: _QueuedPage) -> None:
        if await self._fault_struck_within(self.condition.ms_per_badge / 1000):
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

    async def _fault_struck_within(self, seconds: float) -> bool:
        """Slow mode: wait out the print time, or less if the printer faults meanwhile."""
        if seconds > 0:
            with contextlib.suppress(TimeoutError):
                await self.wait_until(lambda: not self.condition.can_print, seconds)
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
