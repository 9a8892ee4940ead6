"""The agent's HTTP/1.1 client: h11 over asyncio streams, with kept-alive connections.

Why not aiohttp or httpx: the agent runs on a Pi beside a printer, and its
idle memory budget is 45 MB. Importing aiohttp costs the process
14 MB; httpx 10.5 MB once a request has loaded anyio, and five times
aiohttp's CPU per request. h11 (the HTTP/1.1 state machine httpx itself is
built on) costs 0.4 MB. The agent needs little of a general client: a few
hosts, JSON bodies, one CA bundle, timeouts, a size limit on badge downloads.

What callers see:

- an `HttpResponse` for any HTTP answer, 4xx and 5xx included (an error
  answer's body is cut at `ERROR_BODY_CAP`: its status is what matters);
- `TimeoutError` when `timeout_s` passes (connecting and redirects included);
- `HttpFailure` when no answer came: refused, reset, TLS or protocol failure,
  a URL or header that cannot be sent; `TooManyRedirects` (one of them) when
  the redirects do not end;
- `BodyTooLarge` when a success's body passes `max_body` (the rest is never read).

Connections are kept per scheme, host and port and reused while they are
fresh. A kept connection that fails before any byte of the answer may have
been closed by the server in the instant the request went out, or the server
may have read the request and died: only a request the caller calls
idempotent (GET, and the agent API's start, ack and heartbeat, which the
coordinator applies once however often they come) is then sent once more, on
a new connection. Redirects are followed only when asked (badge downloads),
and the Authorization header never follows one to another host.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from urllib.parse import urljoin, urlsplit

import h11

from badgeline.agent.http_wire import (
    DEFAULT_PORTS,
    READ_CHUNK,
    BodyTooLarge,
    Connection,
    HttpFailure,
    HttpResponse,
    RedirectRefused,
    StaleConnection,
    Target,
    TooManyRedirects,
    exchange,
    parse_url,
)

__all__ = ["AddressPolicy", "BodyTooLarge", "HttpClient", "HttpFailure", "HttpResponse",
           "RedirectRefused", "TooManyRedirects"]  # fmt: skip

# Idle connections kept per host: the agent's loops use at most about four at once.
MAX_IDLE_PER_HOST = 4
MAX_REDIRECTS = 10
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})

# (scheme, host, port) -> the address to connect to; raises to refuse the host.
AddressPolicy = Callable[[str, str, int], Awaitable[str]]


class HttpClient:
    """Requests with kept-alive connections; `close()` (or `async with`) ends them."""

    def __init__(
        self, *, ssl_context: ssl.SSLContext | None = None, connect_timeout_s: float = 3.0
    ) -> None:
        # None: verify https against the system's CAs.
        self._ssl_context = ssl_context
        self.connect_timeout_s = connect_timeout_s
        self._idle: defaultdict[tuple[str, str, int], list[Connection]] = defaultdict(list)
        self._busy: set[Connection] = set()
        self._closed = False

    async def __aenter__(self) -> HttpClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        self._closed = True
        connections = [c for idle in self._idle.values() for c in idle] + list(self._busy)
        self._idle.clear()
        for connection in connections:
            connection.close()
        for connection in connections:
            with contextlib.suppress(OSError, ssl.SSLError):  # it is closed either way
                await connection.writer.wait_closed()

    async def request(
        self,
        method: str,
        url: str,
        *,
        headers: dict[str, str] | None = None,
        body: bytes = b"",
        timeout_s: float,
        max_body: int | None = None,
        connect_timeout_s: float | None = None,
        idempotent: bool | None = None,
        follow_redirects: bool = False,
        address_for: AddressPolicy | None = None,
    ) -> HttpResponse:
        """Send one request and read the whole answer within `timeout_s`.

        `idempotent` (default: GET and HEAD are) allows the one resend on a
        new connection described in the module's notes. `address_for` decides,
        for the first URL and every redirect, the address a new connection goes
        to (the agent's badge sources: sources.py); it raises to refuse, and its
        exception leaves this call as it is.
        """
        headers = dict(headers or {})
        retry = method in ("GET", "HEAD") if idempotent is None else idempotent
        target = parse_url(url)
        async with asyncio.timeout(timeout_s):
            for _ in range(MAX_REDIRECTS + 1):
                response = await self._send(target, method, headers, body, max_body,
                                            connect_timeout_s, retry, address_for)  # fmt: skip
                location = response.headers.get("location")
                if not (follow_redirects and response.status in REDIRECT_STATUSES and location):
                    return response
                url = urljoin(url, location)
                if urlsplit(url).scheme not in DEFAULT_PORTS:
                    raise RedirectRefused("a redirect to another scheme than http(s)")
                following = parse_url(url)
                if following.key != target.key:  # the token is for the host it was meant for
                    headers = {k: v for k, v in headers.items() if k.lower() != "authorization"}
                if response.status == 303 or (response.status in (301, 302) and method == "POST"):
                    method, body = "GET", b""
                target = following
        raise TooManyRedirects(f"more than {MAX_REDIRECTS} redirects, the last to {url}")

    async def _send(
        self,
        target: Target,
        method: str,
        headers: dict[str, str],
        body: bytes,
        max_body: int | None,
        connect_timeout_s: float | None,
        retry: bool,
        address_for: AddressPolicy | None,
    ) -> HttpResponse:
        resent = False
        while True:
            connection = await self._connection(target, connect_timeout_s, address_for)
            try:
                response, whole = await exchange(
                    connection, method, target, headers, body, max_body
                )
            except StaleConnection as stale:
                self._discard(connection)
                if not retry or resent:
                    raise HttpFailure(str(stale)) from stale
                resent = True
                self._drop_idle(target)  # kept beside it, likely just as stale
                continue
            except BaseException:
                self._discard(connection)
                raise
            if whole:
                self._release(target, connection)
            else:
                self._discard(connection)  # an error body cut short: the rest is unread
            return response

    # ------------------------------------------------------------ connections

    async def _connection(
        self, target: Target, connect_timeout_s: float | None, address_for: AddressPolicy | None
    ) -> Connection:
        if self._closed:
            raise HttpFailure("the HTTP client is closed")
        # Checked even when a kept connection is reused: the policy may refuse it now.
        address = target.host
        if address_for is not None:
            try:
                address = await address_for(target.scheme, target.host, target.port)
            except OSError as error:  # the name does not resolve
                raise HttpFailure(f"cannot resolve {target.host}: {error}") from error
        idle = self._idle[target.key]
        while idle:
            connection = idle.pop()
            if connection.usable():
                connection.reused = True
                self._busy.add(connection)
                return connection
            connection.close()
        context = self._tls_context() if target.scheme == "https" else None
        connect_timeout_s = connect_timeout_s or self.connect_timeout_s
        try:
            async with asyncio.timeout(connect_timeout_s):
                # To the address checked (not the name again: it may resolve elsewhere
                # now); TLS still checks the certificate against the name.
                reader, writer = await asyncio.open_connection(
                    address, target.port, ssl=context, limit=READ_CHUNK,
                    server_hostname=target.host if context is not None else None,
                )  # fmt: skip
        except TimeoutError:
            raise HttpFailure(
                f"cannot connect to {target.host}:{target.port}: "
                f"no answer within {connect_timeout_s:g} s"
            ) from None
        except ssl.SSLCertVerificationError as error:
            raise HttpFailure(f"TLS certificate not trusted: {error.verify_message}") from error
        except (OSError, ssl.SSLError) as error:
            raise HttpFailure(f"cannot connect to {target.host}:{target.port}: {error}") from error
        connection = Connection(reader, writer)
        self._busy.add(connection)
        return connection

    def _tls_context(self) -> ssl.SSLContext:
        if self._ssl_context is None:
            self._ssl_context = ssl.create_default_context()
        return self._ssl_context

    def _release(self, target: Target, connection: Connection) -> None:
        self._busy.discard(connection)
        protocol = connection.protocol
        if (
            self._closed
            or protocol.our_state is not h11.DONE
            or protocol.their_state is not h11.DONE
            or len(self._idle[target.key]) >= MAX_IDLE_PER_HOST
        ):
            connection.close()  # the server asked to close, or enough are kept
            return
        protocol.start_next_cycle()
        connection.idle_since = time.monotonic()
        self._idle[target.key].append(connection)

    def _drop_idle(self, target: Target) -> None:
        for connection in self._idle.pop(target.key, []):
            connection.close()

    def _discard(self, connection: Connection) -> None:
        self._busy.discard(connection)
        connection.close()

    # ------------------------------------------------------------ one exchange
