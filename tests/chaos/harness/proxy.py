"""A TCP fault proxy: accept, connect upstream, pump bytes both ways; real sockets
on both sides. Between an agent and its coordinator, or its printer, it gives a
venue two faults it has:

- `cut()` aborts every open connection (both sides see a reset) and makes the
  proxy close each new connection as soon as it is accepted, as a pulled cable
  or a dead switch port would look to an HTTP client; `heal()` relays again.
- `hold_replies()`: bytes from the client still reach the upstream, but its
  answers wait in the proxy until `release_replies()`. In front of a printer
  that is a printer slow to answer a status query: the badge goes out and the
  agent sits in its confirmation probe, grant taken and ack not yet sent.

`FaultProxy` runs on the caller's event loop (start and stop are awaited, the
faults are plain calls); `ThreadedFaultProxy` runs one on an event loop of its
own in a thread, for tests that drive it from plain synchronous code while the
agent, coordinator and emulator run as processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import Any

CONNECT_TIMEOUT_S = 5.0
# How long stop() lets each connection end by itself once its sockets are aborted.
STOP_GRACE_S = 5.0


class FaultProxy:
    def __init__(self, upstream_port: int, upstream_host: str = "127.0.0.1",
                 listen_port: int = 0) -> None:  # fmt: skip
        self.upstream = (upstream_host, upstream_port)
        self.port = listen_port
        self.cut_now = False
        # Seconds each reply waits before it is passed on (a slow link): 0, none.
        self.reply_delay_s = 0.0
        self.connections_total = 0
        self.refused_total = 0
        self._server: asyncio.Server | None = None
        self._replies_flow = asyncio.Event()
        self._replies_flow.set()
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
        self.release_replies()
        self._abort_all()
        # Aborted, each connection ends by itself; one that does not is cancelled.
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=STOP_GRACE_S)
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

    def hold_replies(self) -> None:
        self._replies_flow.clear()

    def release_replies(self) -> None:
        self._replies_flow.set()

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
                asyncio.open_connection(*self.upstream), CONNECT_TIMEOUT_S
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
            asyncio.create_task(_pump(client_reader, upstream_writer, gate=None)),
            asyncio.create_task(
                _pump(
                    upstream_reader,
                    client_writer,
                    gate=self._replies_flow,
                    delay_s=lambda: self.reply_delay_s,
                )
            ),
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


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                gate: asyncio.Event | None,
                delay_s: Callable[[], float] = lambda: 0.0) -> None:  # fmt: skip
    with contextlib.suppress(ConnectionError, OSError):
        while data := await reader.read(65536):
            if gate is not None:
                await gate.wait()
            if wait_s := delay_s():
                await asyncio.sleep(wait_s)
            if writer.is_closing():
                return
            writer.write(data)
            await writer.drain()


class ThreadedFaultProxy:
    """A `FaultProxy` on its own event loop thread; every call blocks until done."""

    def __init__(self, upstream_port: int, upstream_host: str = "127.0.0.1") -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._proxy = FaultProxy(upstream_port, upstream_host)

    @property
    def port(self) -> int:
        return self._proxy.port

    @property
    def url(self) -> str:
        return self._proxy.url

    def start(self) -> ThreadedFaultProxy:
        self._thread.start()
        self._call(self._proxy.start)
        return self

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        self._call(self._proxy.stop)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()

    def cut(self) -> None:
        self._call(self._proxy.cut)

    def heal(self) -> None:
        self._call(self._proxy.heal)

    def hold_replies(self) -> None:
        self._call(self._proxy.hold_replies)

    def release_replies(self) -> None:
        self._call(self._proxy.release_replies)

    def delay_replies(self, seconds: float) -> None:
        """Each reply waits `seconds` before it is passed on (0: at once again)."""
        self._call(setattr, self._proxy, "reply_delay_s", seconds)

    def _call(self, function: Callable[..., Any], *args: Any) -> Any:
        async def run() -> Any:
            result = function(*args)
            return await result if asyncio.iscoroutine(result) else result

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(STOP_GRACE_S + 5)
