"""The printer port: a printer language over TCP, what each connection's bytes do to it.

Each TCP connection has its own decoder (the language's, language.py), so a
job is what arrives between cuts (or within one label format) on one
connection; every connection feeds the one print head and its
bounded receive buffer, as a real printer has one head however many hosts
talk to it. A connection reads its socket only while the buffer has room
(printhead.py says what fills it and what a fault does to it).

TCP flow control must then reach the sender, as it does from a real
printer, whose TCP window is its free buffer (Epson's UB-E02 network
interface buffers 16 KB from the host: UB-E02 Technical Reference, 4.1.1).
So the operating system may hold next to nothing for the emulator: every
accepted socket has the smallest receive buffer Linux allows, and asyncio's
stream buffer is small too. What the printer has not read then waits in
the *sender's* send queue, where its TCP stack can see it (the agent tells a
busy printer from a gone one by it), and a real-time status query sent
behind a badge waits there too, until the printer has read up to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import socket
from typing import Any

from badgeline.emulator.decoder import PageCut, ProcessIdRequest
from badgeline.emulator.label import Label
from badgeline.emulator.language import Decoder, Family, LabelCut, PageWatcher, Query, Sheet
from badgeline.emulator.printhead import PrintHead
from badgeline.emulator.state import PrinterCondition

logger = logging.getLogger(__name__)

READ_SIZE = 65536
# How long stop() lets connection handlers finish after their sockets close.
STOP_GRACE_S = 5.0
# The smallest receive buffer (Linux rounds it up to its minimum, about 2 KB) and
# asyncio's stream buffer: what the OS and asyncio hold beyond the modelled buffer.
SOCKET_RECEIVE_BUFFER = 1
STREAM_LIMIT = 512


class _Connection:
    def __init__(self, number: int, writer: asyncio.StreamWriter, decoder: Decoder) -> None:
        self.number = number
        self.writer = writer
        self.decoder = decoder
        self.watcher: PageWatcher | None = None
        # Content arrived while the printer could not print, or a fault cleared
        # the buffer while it held this page's start: the page is lost even if
        # the fault clears before the cut.
        self.page_spoiled = False
        # Bytes read since the last cut, held in the receive buffer.
        self.receiving = 0

    def reply(self, data: bytes) -> None:
        """Send a late reply (a process ID response); gone with the connection."""
        if not self.writer.is_closing():
            self.writer.write(data)


class PrinterPort:
    """The TCP listener of one emulated printer and every connection to it."""

    def __init__(
        self, condition: PrinterCondition, head: PrintHead, family: Family, *, write_only: bool
    ) -> None:
        self.condition = condition
        self._head = head
        self._family = family
        # what PrinterEmulator.write_only and .lose_process_ids say
        self.write_only = write_only
        self.lose_process_ids = 0
        self._connection_numbers = itertools.count(1)
        self._connections: set[_Connection] = set()
        self._connection_writers: dict[asyncio.Task[Any], asyncio.StreamWriter] = {}
        self._server: asyncio.Server | None = None

    async def start(self, host: str, port: int) -> int:
        """Listen on `host`:`port` (0: a free port); return the port bound."""
        self._server = await asyncio.start_server(
            self._serve_connection, sock=_listening_socket(host, port), limit=STREAM_LIMIT
        )
        bound: int = self._server.sockets[0].getsockname()[1]
        return bound

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        await self._close_connections()
        if self._server is not None:
            await self._server.wait_closed()
        self._server = None

    def spoil_pages(self) -> None:
        """The buffer was cleared: every page still arriving is lost, even if cut later."""
        for connection in self._connections:
            if connection.decoder.has_pending_content:
                connection.page_spoiled = True

    async def _close_connections(self) -> None:
        # Closing the socket ends each handler's read loop; cancelling a
        # handler instead makes Python 3.11's stream machinery log an error.
        handlers = list(self._connection_writers)
        for writer in self._connection_writers.values():
            writer.close()
        if not handlers:
            return
        _, stuck = await asyncio.wait(handlers, timeout=STOP_GRACE_S)
        for task in stuck:
            task.cancel()
        await asyncio.gather(*stuck, return_exceptions=True)

    # ------------------------------------------------------------ each connection

    async def _serve_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connection_writers[task] = writer
        decoder = self._family.decoder(self.condition)
        connection = _Connection(next(self._connection_numbers), writer, decoder)
        connection.watcher = self._family.watcher(
            lambda data: None if self.write_only else connection.reply(data),
            decoder, self.condition,
        )  # fmt: skip
        self._connections.add(connection)
        self._count_connection(+1)
        # Debug level: agents may open a connection for every status probe.
        peer = writer.get_extra_info("peername")
        logger.debug("connection %d from %s", connection.number, peer)
        try:
            await self._read_until_closed(connection, reader, writer)
        except ConnectionError as error:
            logger.info("connection %d lost: %s", connection.number, error)
        except Exception:
            # A decoder bug must cost one connection, never the printer.
            logger.exception("connection %d failed", connection.number)
        finally:
            self._connection_writers.pop(task, None)
            self._connections.discard(connection)
            self._close_connection(connection)
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    async def _read_until_closed(
        self,
        connection: _Connection,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        # With room for any of it, the printer reads all that is there: the little the
        # OS holds must not keep a status query behind it waiting (see the module notes).
        while (await self._head.wait_for_room()) and (chunk := await reader.read(READ_SIZE)):
            replies = self._handle_chunk(connection, chunk)
            if replies:
                writer.write(replies)
                await writer.drain()

    def _handle_chunk(self, connection: _Connection, chunk: bytes) -> bytes:
        """Decode one read; return the status bytes to send back.

        Runs without awaiting, so the fault is the same for the whole chunk. A
        chunk read just before the printer froze is kept, as frozen keeps all.
        """
        can_print = self.condition.keeps_data
        self._hold(connection, len(chunk))
        replies = bytearray()
        for event in connection.decoder.feed(chunk):
            if isinstance(event, Query):
                self._head.counters.status_queries += 1
                if not self.write_only:
                    view = self._head.view()
                    answer = self._family.answer(event, self.condition, view, connection.decoder)
                    replies += answer or b""
            elif isinstance(event, PageCut):
                self._handle_cut(connection, event.page, can_print)
            elif isinstance(event, LabelCut):
                self._handle_cut(connection, event.label, can_print, event.copies)
            elif isinstance(event, ProcessIdRequest):
                self._handle_process_id(connection, event.process_id, can_print)
        if not connection.decoder.has_pending_content:
            # Commands that print nothing (status queries, settings) leave the buffer at once.
            self._hold(connection, -connection.receiving)
        elif not can_print:
            # A faulted printer keeps nothing of a page it cannot print (the page is
            # discarded at its cut): it goes on reading, and answering status.
            connection.page_spoiled = True
            self._hold(connection, -connection.receiving)
        self._head.notify()
        return bytes(replies)

    def _handle_cut(
        self, connection: _Connection, page: Sheet, can_print: bool, copies: int = 1
    ) -> None:
        # The page holds what its connection sent since the last cut (to the
        # read that carried the cut: close enough for a buffer model).
        size = connection.receiving
        self._hold(connection, -size)
        number, watcher = connection.number, connection.watcher
        if page.truncated:
            logger.warning("connection %d: page exceeded the emulator's limits", number)
        rejection = page.rejection if isinstance(page, Label) else None
        if not can_print:
            self._head.cut_discarded()
            self._head.discard(page, number, f"printer is {self.condition.fault}", watcher)
        elif connection.page_spoiled:
            self._head.cut_discarded()
            self._head.discard(page, number, "a fault cleared part of it", watcher)
        elif rejection is not None:
            self._head.cut_discarded()
            self._head.discard(page, number, rejection, watcher)
        elif copies > 0:
            self._head.submit(page, number, size, watcher, copies)
        connection.page_spoiled = False

    def _handle_process_id(
        self, connection: _Connection, process_id: bytes, can_print: bool
    ) -> None:
        if self.write_only:
            self._head.counters.process_ids_dropped += 1
        elif can_print and self.lose_process_ids > 0:
            self.lose_process_ids -= 1
            self._head.counters.process_ids_dropped += 1
        elif can_print:
            self._head.submit_process_id(process_id, connection.number, connection.reply)
        else:
            # An offline printer keeps it in a buffer that the fault's recovery clears.
            self._head.counters.process_ids_dropped += 1

    def _hold(self, connection: _Connection, change: int) -> None:
        connection.receiving += change
        self._head.receiving_bytes += change

    def _count_connection(self, change: int) -> None:
        self._head.counters.connections += change
        if change > 0:
            self._head.counters.connections_total += 1
        self._head.notify()

    def _close_connection(self, connection: _Connection) -> None:
        decoder = connection.decoder
        self._hold(connection, -connection.receiving)
        self._head.uncut_gone()
        if decoder.has_pending_content:
            # Paper printed but never cut is not a badge anyone can take away.
            self._head.counters.abandoned += 1
            logger.warning("connection %d closed with uncut content", connection.number)
        if decoder.unknown_commands:
            logger.info(
                "connection %d skipped %d unknown commands",
                connection.number, decoder.unknown_commands,
            )  # fmt: skip
        if decoder.skipped_symbols:
            logger.info(
                "connection %d sent %d barcodes or 2D codes the emulator does not draw",
                connection.number, decoder.skipped_symbols,
            )  # fmt: skip
        self._count_connection(-1)
        logger.debug("connection %d closed", connection.number)


def _listening_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket whose connections get the smallest receive buffer.

    Set before listen(): accepted sockets inherit it, and the window scale a
    connection agrees on at its start follows from it.
    """
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    listener = socket.socket(family, kind, proto)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SOCKET_RECEIVE_BUFFER)
        listener.bind(address)
        listener.listen(64)
        listener.setblocking(False)
    except BaseException:
        listener.close()
        raise
    return listener
