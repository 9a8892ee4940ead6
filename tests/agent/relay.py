"""A TCP relay that can hold back what the server sends: a printer slow to answer.

Real sockets on both sides. While replies are held, bytes from the client
still reach the server (the printer prints), but its status replies wait in
the relay, so the agent sits in its confirmation probe for as long as the
test needs, with the grant taken and the ack not yet sent.
"""

from __future__ import annotations

import asyncio
import contextlib


class ReplyHoldingRelay:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = 0
        self._replies_flow = asyncio.Event()
        self._replies_flow.set()
        self._server: asyncio.Server | None = None
        self._pumps: set[asyncio.Task[None]] = set()
        self._writers: list[asyncio.StreamWriter] = []

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    def hold_replies(self) -> None:
        self._replies_flow.clear()

    def release_replies(self) -> None:
        self._replies_flow.set()

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for writer in self._writers:
            writer.close()
        for pump in self._pumps:
            pump.cancel()
        await asyncio.gather(*self._pumps, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def _serve(self, client_reader: asyncio.StreamReader,
                     client_writer: asyncio.StreamWriter) -> None:  # fmt: skip
        server_reader, server_writer = await asyncio.open_connection(*self.target)
        self._writers += [client_writer, server_writer]
        pumps = [
            asyncio.create_task(self._pump(client_reader, server_writer, gate=None)),
            asyncio.create_task(self._pump(server_reader, client_writer, gate=self._replies_flow)),
        ]
        self._pumps.update(pumps)
        await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        for writer in (client_writer, server_writer):
            writer.close()

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    gate: asyncio.Event | None) -> None:  # fmt: skip
        with contextlib.suppress(ConnectionError):
            while data := await reader.read(65536):
                if gate is not None:
                    await gate.wait()
                writer.write(data)
                await writer.drain()
        writer.close()
