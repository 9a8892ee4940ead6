"""A TCP relay between an agent and what it talks to, with two faults a venue has.

Real sockets on both sides, its own event loop in a thread, so the tests drive it
from plain synchronous code while the agent, coordinator and emulator run as
processes:

- `hold_replies()`: bytes from the client still reach the server, but the
  server's answers wait in the relay. Between an agent and its printer that is a
  printer slow to answer a status query: the badge goes out and the agent sits in
  its confirmation probe, grant taken and ack not yet sent.
- `cut()`: every connection is dropped and new ones are closed at once, until
  `restore()`. Between an agent and the coordinator that is a network drop: no
  heartbeat, no ack gets through.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import Any


class TcpRelay:
    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        self.target = (target_host, target_port)
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self._replies_flow: asyncio.Event | None = None
        self._cut = False
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[Any]] = set()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # ------------------------------------------------------------ control (any thread)

    def start(self) -> TcpRelay:
        self._thread.start()
        self._call(self._start)
        return self

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        self._call(self._stop)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()

    def hold_replies(self) -> None:
        self._call(self._set_flow, False)

    def release_replies(self) -> None:
        self._call(self._set_flow, True)

    def cut(self) -> None:
        self._call(self._cut_all)

    def restore(self) -> None:
        self._call(self._restore)

    def _call(self, function: Callable[..., Any], *args: Any) -> Any:
        async def run() -> Any:
            result = function(*args)
            return await result if asyncio.iscoroutine(result) else result

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(10)

    # ------------------------------------------------------------ the relay's loop

    async def _start(self) -> None:
        self._replies_flow = asyncio.Event()
        self._replies_flow.set()
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _stop(self) -> None:
        if self._server is not None:
            self._server.close()
        # Let every connection end by itself: a cancelled handler is logged as an error.
        self._set_flow(True)
        self._abort_all()
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=5)
        if self._server is not None:
            await self._server.wait_closed()

    def _set_flow(self, flowing: bool) -> None:
        assert self._replies_flow is not None
        if flowing:
            self._replies_flow.set()
        else:
            self._replies_flow.clear()

    def _cut_all(self) -> None:
        self._cut = True
        self._abort_all()

    def _restore(self) -> None:
        self._cut = False

    def _abort_all(self) -> None:
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()

    async def _serve(self, client_reader: asyncio.StreamReader,
                     client_writer: asyncio.StreamWriter) -> None:  # fmt: skip
        if self._cut:
            client_writer.transport.abort()
            return
        serving = asyncio.current_task()
        assert serving is not None
        self._tasks.add(serving)
        try:
            await self._relay(client_reader, client_writer)
        finally:
            self._tasks.discard(serving)

    async def _relay(self, client_reader: asyncio.StreamReader,
                     client_writer: asyncio.StreamWriter) -> None:  # fmt: skip
        try:
            server_reader, server_writer = await asyncio.open_connection(*self.target)
        except OSError:
            client_writer.transport.abort()
            return
        self._writers.update((client_writer, server_writer))
        pumps = [
            asyncio.create_task(self._pump(client_reader, server_writer, gate=None)),
            asyncio.create_task(self._pump(server_reader, client_writer, self._replies_flow)),
        ]
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for pump in pumps:
                pump.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)
            for writer in (client_writer, server_writer):
                self._writers.discard(writer)
                writer.transport.abort()

    @staticmethod
    async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    gate: asyncio.Event | None) -> None:  # fmt: skip
        with contextlib.suppress(ConnectionError):
            while data := await reader.read(65536):
                if gate is not None:
                    await gate.wait()
                if writer.is_closing():
                    return
                writer.write(data)
                await writer.drain()
