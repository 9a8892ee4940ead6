"""A TCP fault proxy: accept, connect upstream, pump bytes both ways.

`cut()` aborts every open connection (both sides see a reset) and makes the
proxy close each new connection as soon as it is accepted, as a pulled cable
or a dead switch port would look to an HTTP client; `heal()` relays again.
The proxy runs on the caller's event loop; cut and heal are plain calls.
"""

from __future__ import annotations

import asyncio
import contextlib


class FaultProxy:
    def __init__(self, upstream_port: int, upstream_host: str = "127.0.0.1",
                 listen_port: int = 0) -> None:  # fmt: skip
        self.upstream = (upstream_host, upstream_port)
        self.port = listen_port
        self.cut_now = False
        self.connections_total = 0
        self.refused_total = 0
        self._server: asyncio.Server | None = None
        self._transports: set[asyncio.WriteTransport] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        self._abort_all()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    def cut(self) -> None:
        self.cut_now = True
        self._abort_all()

    def heal(self) -> None:
        self.cut_now = False

    def _abort_all(self) -> None:
        for transport in list(self._transports):
            transport.abort()
        self._transports.clear()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.cut_now:
            self.refused_total += 1
            writer.transport.abort()
            return
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._relay(reader, writer)
        finally:
            self._tasks.discard(task)

    async def _relay(self, client_reader: asyncio.StreamReader,
                     client_writer: asyncio.StreamWriter) -> None:  # fmt: skip
        try:
            upstream_reader, upstream_writer = await asyncio.wait_for(
                asyncio.open_connection(*self.upstream), 5.0
            )
        except (OSError, TimeoutError):
            client_writer.transport.abort()  # upstream down: the client sees a reset
            return
        if self.cut_now:  # cut while we were connecting
            client_writer.transport.abort()
            upstream_writer.transport.abort()
            return
        self.connections_total += 1
        pair = (client_writer.transport, upstream_writer.transport)
        self._transports.update(pair)
        pumps = [
            asyncio.create_task(_pump(client_reader, upstream_writer)),
            asyncio.create_task(_pump(upstream_reader, client_writer)),
        ]
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for pump in pumps:
                pump.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)
            for transport in pair:
                self._transports.discard(transport)
                transport.abort()


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError, OSError):
        while data := await reader.read(65536):
            if writer.is_closing():
                return
            writer.write(data)
            await writer.drain()
