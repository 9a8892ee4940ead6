"""The emulator as a process component: a printer port, a control API, one print head.

The printer port (port.py) takes the printer's language (ESC/POS, ZPL or
Brother QL raster: language.py) over TCP from any number of connections;
the print head (printhead.py) prints what they cut, one badge at a time,
and keeps the ground truth of what came out; the control API (control.py)
is how tests and the demo jam, slow and read the printer.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

from aiohttp import web

from badgeline.emulator.control import create_control_app
from badgeline.emulator.families import family as family_for
from badgeline.emulator.language import Family, Language, fault_error
from badgeline.emulator.media import Media
from badgeline.emulator.port import PrinterPort
from badgeline.emulator.printhead import DEFAULT_BUFFER_BYTES, PrintedBadge, PrintHead
from badgeline.emulator.state import Fault, PrinterCondition

logger = logging.getLogger(__name__)


class PrinterEmulator:
    """A network printer speaking `language` (ESC/POS by default). Port 0 picks a free
    port; read `port` after `start()`. ValueError for a fault or media the printer
    cannot have."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        control_port: int = 0,
        out_dir: str | Path = "emulator-out",
        *,
        fault: Fault = Fault.NONE,
        ms_per_badge: int = 0,
        buffer_bytes: int = DEFAULT_BUFFER_BYTES,
        write_only: bool = False,
        language: Language | str = Language.ESCPOS,
        model: str | None = None,
        media: Media | None = None,
    ) -> None:
        self.host = host
        self.out_dir = Path(out_dir).resolve()
        self.family: Family = family_for(language, model)
        if (problem := fault_error(self.family, Fault(fault))) is not None:
            raise ValueError(problem)
        loaded = self.family.check_media(media or self.family.default_media())
        self.condition = PrinterCondition(fault, ms_per_badge, holds=self.family.holds,
                                          media=loaded)  # fmt: skip
        self._requested_ports = (port, control_port)
        self._bound_ports: tuple[int, int] | None = None
        self._head = PrintHead(self.condition, self.out_dir, buffer_bytes)
        self._port = PrinterPort(self.condition, self._head, self.family, write_only=write_only)
        self._control_runner: web.AppRunner | None = None
        self._head_task: asyncio.Task[None] | None = None

    # ------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        try:
            await self._start()
        except BaseException:
            # A port already taken must not leave the other listener open.
            await self.stop()
            raise
        logger.info(
            "emulator listening printer=%s:%d control=%s:%d out=%s",
            self.host, self.port, self.host, self.control_port, self.out_dir,
        )  # fmt: skip

    async def _start(self) -> None:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self._head.switch_on()
        port, control_port = self._requested_ports
        bound_port = await self._port.start(self.host, port)
        self._control_runner = web.AppRunner(create_control_app(self), access_log=None)
        await self._control_runner.setup()
        await web.TCPSite(self._control_runner, self.host, control_port).start()
        self._head_task = asyncio.create_task(self._head.run(), name="emulator-print-head")
        self._bound_ports = (bound_port, self._control_runner.addresses[0][1])

    async def stop(self) -> None:
        """Close every socket; pages still waiting for the print head are never printed."""
        self._head.switch_off()  # a connection waiting for room (full, paused) ends at once
        await self._port.stop()
        if self._head_task is not None:
            self._head_task.cancel()
            await asyncio.gather(self._head_task, return_exceptions=True)
        if self._control_runner is not None:
            await self._control_runner.cleanup()
        if self._head.queued:
            logger.warning("stopped with %d cut pages never printed", self._head.queued)
        self._control_runner = self._head_task = None

    async def __aenter__(self) -> PrinterEmulator:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.stop()

    # ------------------------------------------------------------ what tests and the API see

    @property
    def port(self) -> int:
        return self._bound()[0]

    @property
    def control_port(self) -> int:
        return self._bound()[1]

    def _bound(self) -> tuple[int, int]:
        if self._bound_ports is None:
            raise RuntimeError("the emulator has not been started")
        return self._bound_ports

    @property
    def fault(self) -> Fault:
        return self.condition.fault

    @fault.setter
    def fault(self, value: Fault) -> None:
        if (problem := fault_error(self.family, Fault(value))) is not None:
            raise ValueError(problem)
        if value != self.condition.fault:
            logger.info("fault %s -> %s", self.condition.fault, value)
        self.condition.fault = value
        if self.condition.clears_buffer:
            self._head.flush(f"the buffer was cleared: {value}")
            self._port.spoil_pages()
        self._head.notify()

    @property
    def language(self) -> Language:
        return self.family.language

    @property
    def media(self) -> Media:
        """What is loaded: labels are laid out on it and status replies report it."""
        return self.condition.media

    @media.setter
    def media(self, value: Media) -> None:
        self.condition.media = self.family.check_media(value)
        logger.info("media loaded: %s", self.condition.media)

    def media_status(self) -> dict[str, Any]:
        return {"language": str(self.family.language), "model": self.family.model,
                **self.condition.media.row()}  # fmt: skip

    @property
    def ms_per_badge(self) -> int:
        return self.condition.ms_per_badge

    @ms_per_badge.setter
    def ms_per_badge(self, value: int) -> None:
        self.condition.ms_per_badge = value
        self._head.notify()

    @property
    def write_only(self) -> bool:
        """A write-only printer (many cheap network printers and print servers): it
        prints, and answers nothing, neither DLE EOT nor GS ( H."""
        return self._port.write_only

    @write_only.setter
    def write_only(self, value: bool) -> None:
        self._port.write_only = value

    @property
    def lose_process_ids(self) -> int:
        """Tests: lose this many of the next GS ( H requests while printing on, as a
        request that arrived during a blink offline is lost (the agent must not
        doubt the badges behind it whose own answers come)."""
        return self._port.lose_process_ids

    @lose_process_ids.setter
    def lose_process_ids(self, count: int) -> None:
        self._port.lose_process_ids = count

    @property
    def printed(self) -> list[PrintedBadge]:
        return list(self._head.printed)

    def printed_rows(self) -> list[dict[str, Any]]:
        return [badge.row() for badge in self._head.printed]

    def status(self) -> dict[str, Any]:
        counters = self._head.counters
        return {
            "fault": str(self.condition.fault),
            "ms_per_badge": self.condition.ms_per_badge,
            "write_only": self.write_only,
            "printed": len(self._head.printed),
            "queued": self._head.queued,
            "printing": self._head.printing,
            "buffer_bytes": self._head.buffer_bytes,
            "held_bytes": self._head.held_bytes,
            "discarded": counters.discarded,
            "abandoned": counters.abandoned,
            "status_queries": counters.status_queries,
            "process_ids_answered": counters.process_ids_answered,
            "process_ids_dropped": counters.process_ids_dropped,
            "connections": counters.connections,
            "connections_total": counters.connections_total,
        }

    def reset(self) -> None:
        """Forget what was printed and the counters; fault and speed stay as set."""
        self._head.reset()

    async def wait_until(
        self, predicate: Callable[[PrinterEmulator], bool], timeout: float = 10.0
    ) -> None:
        """Wait for a condition on this emulator without polling; TimeoutError if it never holds."""
        await self._head.wait_until(lambda: predicate(self), timeout)
