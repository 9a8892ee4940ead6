"""A badge server that misbehaves on purpose, one way per path: for fetch and preparation tests."""

from __future__ import annotations

import asyncio
import contextlib
import threading

# Each hostile fetch must end well within this (a test bound, not a measurement).
FETCH_BOUND_S = 10.0


class HostileServer:
    """A raw TCP server whose every connection gets one of the misbehaviours below."""

    def __init__(self) -> None:
        self.server: asyncio.Server | None = None
        self.handlers: set[asyncio.Task[None]] = set()
        self.stopping = asyncio.Event()

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)

    async def stop(self) -> None:
        assert self.server is not None
        self.server.close()
        self.stopping.set()  # handlers end on their own: a cancelled one logs an error
        await asyncio.gather(*self.handlers, return_exceptions=True)

    async def pause(self, seconds: float) -> bool:
        """Sleep, or less when the server stops; False once it stops."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self.stopping.wait()
        return not self.stopping.is_set()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.handlers.add(task)
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            path = head.split(b" ", 2)[1].decode()
            await getattr(self, "_" + path.strip("/").removesuffix(".pdf"))(writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self.handlers.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _trickle(self, writer: asyncio.StreamWriter) -> None:
        # One byte a second, for ever: every read gets something, the whole never comes.
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
        while not writer.is_closing():
            writer.write(b"%")
            await writer.drain()
            if not await self.pause(1):
                return

    async def _silent(self, writer: asyncio.StreamWriter) -> None:
        await self.pause(3600)  # takes the request, never answers

    async def _loop(self, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 302 Found\r\nLocation: /loop.pdf\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()

    async def _flood(self, writer: asyncio.StreamWriter) -> None:
        # 20 MiB without a length: only counting while reading stops it.
        writer.write(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n%PDF-")
        for _ in range(20 * 16):
            writer.write(b"x" * 65536)
            await writer.drain()

    async def _liar(self, writer: asyncio.StreamWriter) -> None:
        # Claims a small body, sends half of it, hangs up.
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n%PDF-1.7 " + b"x" * 400)
        await writer.drain()

    async def _huge(self, writer: asyncio.StreamWriter) -> None:
        # Claims 10 GB: refused on the claim, nothing read.
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 10000000000\r\n\r\n%PDF-")
        await writer.drain()
        await self.pause(3600)


class ThreadedHostileServer:
    """A HostileServer on its own event loop thread, for synchronous process-level tests."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="hostile",
                                        daemon=True)  # fmt: skip
        self.server: HostileServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return self.server.url

    def start(self) -> None:
        self._thread.start()

        async def started() -> HostileServer:
            server = HostileServer()
            await server.start()
            return server

        self.server = asyncio.run_coroutine_threadsafe(started(), self._loop).result(10)

    def stop(self) -> None:
        if self.server is not None:
            asyncio.run_coroutine_threadsafe(self.server.stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()
