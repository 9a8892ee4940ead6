"""A small HTTP/1.1 server for the agent's status port: h11 over asyncio streams.

The status port serves four fixed routes to a tech's browser, a monitoring
script or Prometheus; the agent's memory budget is what rules out aiohttp
here too (see http_client.py). Requests are read whole (bodies are bounded),
answered by one handler each, and connections are kept alive until the
client closes them or they idle for `IDLE_TIMEOUT_S`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import h11

READ_CHUNK = 64 * 1024
MAX_REQUEST_BODY = 64 * 1024
IDLE_TIMEOUT_S = 30.0
# On close, a request being answered (a test print) gets this long to finish.
SHUTDOWN_GRACE_S = 1.0
SERVER_NAME = "badgeline-agent"
log = logging.getLogger(__name__)


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]  # names in lower case
    body: bytes
    remote: str | None  # the peer's IP address


@dataclass
class Reply:
    status: int
    body: bytes = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)


def json_reply(document: Any, status: int = 200, headers: dict[str, str] | None = None) -> Reply:
    return Reply(status, json.dumps(document).encode(), headers=headers or {})


Handler = Callable[[Request], Awaitable[Reply]]


class HttpServer:
    """Serves `handler` on host:port; `port` is the bound one once started (0 picks one)."""

    def __init__(self, handler: Handler, host: str, port: int) -> None:
        self.handler = handler
        self.host = host
        self.port = port
        self._listener: asyncio.Server | None = None
        # Each connection's task, and whether it is answering a request right now.
        self._connections: dict[asyncio.Task[None], bool] = {}

    async def start(self) -> None:
        self._listener = await asyncio.start_server(self._serve, self.host, self.port)
        self.port = int(self._listener.sockets[0].getsockname()[1])

    async def close(self) -> None:
        """Stop listening and end every connection (in-flight answers are cut short)."""
        listener, self._listener = self._listener, None
        if listener is None:
            return
        listener.close()
        for task, answering in list(self._connections.items()):
            if not answering:
                task.cancel()
        busy = list(self._connections)
        if busy:
            await asyncio.wait(busy, timeout=SHUTDOWN_GRACE_S)
        for task in busy:
            task.cancel()
        await asyncio.gather(*busy, return_exceptions=True)
        await listener.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._listener is None:
            # Accepted just as close() ran, before this task was there to cancel:
            # close it here (Python 3.12's wait_closed() would wait for it).
            writer.close()
            return
        task = asyncio.current_task()
        assert task is not None
        self._connections[task] = False
        peer = writer.get_extra_info("peername")
        remote = str(peer[0]) if isinstance(peer, tuple) and peer else None
        protocol = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_REQUEST_BODY)
        try:
            while True:
                request = await self._read_request(reader, protocol, remote)
                if request is None:
                    return  # the client closed, or idled out
                self._connections[task] = True
                reply = await self._answer(request)
                writer.write(_encode(protocol, request.method, reply))
                await writer.drain()
                self._connections[task] = False
                if self._listener is None:
                    return  # closing: no more requests on this connection
                if protocol.our_state is not h11.DONE or protocol.their_state is not h11.DONE:
                    return  # either side asked to close
                protocol.start_next_cycle()
        except h11.RemoteProtocolError as error:
            await _refuse(writer, protocol, error)
        except (OSError, h11.LocalProtocolError, asyncio.IncompleteReadError):
            return  # a broken connection: nothing to answer
        finally:
            self._connections.pop(task, None)
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    async def _read_request(
        self, reader: asyncio.StreamReader, protocol: h11.Connection, remote: str | None
    ) -> Request | None:
        head: h11.Request | None = None
        body = bytearray()
        while True:
            event = protocol.next_event()
            if event is h11.NEED_DATA:
                try:
                    async with asyncio.timeout(IDLE_TIMEOUT_S):
                        data = await reader.read(READ_CHUNK)
                except TimeoutError:
                    return None
                protocol.receive_data(data)
            elif isinstance(event, h11.Request):
                head = event
            elif isinstance(event, h11.Data):
                body += event.data
                if len(body) > MAX_REQUEST_BODY:
                    raise h11.RemoteProtocolError("the request body is too large", 413)
            elif isinstance(event, h11.EndOfMessage) and head is not None:
                headers = {name.decode("latin-1"): value.decode("latin-1")
                           for name, value in head.headers}  # fmt: skip
                target = head.target.decode("latin-1")
                return Request(head.method.decode("ascii"), target.split("?", 1)[0], headers,
                               bytes(body), remote)  # fmt: skip
            else:
                return None  # ConnectionClosed, or a client that stopped mid-request

    async def _answer(self, request: Request) -> Reply:
        try:
            return await self.handler(request)
        except Exception as error:  # one bad request must not take the port down
            log.exception("the status port's handler failed for %s %s", request.method,
                          request.path)  # fmt: skip
            return json_reply({"error": f"internal error: {type(error).__name__}"}, 500)


async def _refuse(
    writer: asyncio.StreamWriter, protocol: h11.Connection, error: h11.RemoteProtocolError
) -> None:
    """Answer a malformed or oversized request with a 4xx that says so, then close."""
    if protocol.our_state not in (h11.IDLE, h11.SEND_RESPONSE):
        return  # an answer is already under way: only closing is left
    reply = json_reply({"error": str(error)}, error.error_status_hint,
                       headers={"Connection": "close"})  # fmt: skip
    with contextlib.suppress(OSError, h11.ProtocolError):
        writer.write(_encode(protocol, "GET", reply))
        await writer.drain()


def _encode(protocol: h11.Connection, method: str, reply: Reply) -> bytes:
    headers = [
        ("Content-Type", reply.content_type),
        ("Content-Length", str(len(reply.body))),
        ("Server", SERVER_NAME),
        *reply.headers.items(),
    ]
    data = protocol.send(h11.Response(status_code=reply.status, headers=headers)) or b""
    if method != "HEAD" and reply.body:
        data += protocol.send(h11.Data(data=reply.body)) or b""
    data += protocol.send(h11.EndOfMessage()) or b""
    return data
