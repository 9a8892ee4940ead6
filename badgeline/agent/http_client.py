"""The agent's HTTP/1.1 client: h11 over asyncio streams, with kept-alive connections.

Why not aiohttp or httpx: the agent runs on a Pi beside a printer, and its
idle memory budget is 45 MB (issue 3). Importing aiohttp costs the process
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
import json
import ssl
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, cast
from urllib.parse import quote, urljoin, urlsplit

import h11

READ_CHUNK = 64 * 1024
# Idle connections kept per host: the agent's loops use at most about four at once.
MAX_IDLE_PER_HOST = 4
# A connection idle longer is closed, not reused: a NAT or a Wi-Fi roam may have
# dropped it without a word, and the next request would wait out its timeout
# (aiohttp's client keeps 15 s too).
IDLE_EXPIRY_S = 15.0
MAX_REDIRECTS = 10
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
# How much of an error answer's body is read; beyond it the body is cut.
ERROR_BODY_CAP = 64 * 1024
DEFAULT_PORTS = {"http": 80, "https": 443}
USER_AGENT = "badgeline-agent"
# Characters a URL path or query keeps unescaped (RFC 3986 reserved and unreserved, and %).
URL_SAFE = "/%:@!$&'()*+,;=-._~"


# (scheme, host, port) -> the address to connect to; raises to refuse the host.
AddressPolicy = Callable[[str, str, int], Awaitable[str]]


class HttpFailure(Exception):
    """No HTTP answer came: the connection was refused, reset or broken, or TLS failed."""


class RedirectRefused(HttpFailure):
    """A redirect to something that is not an http(s) URL (file:, ftp:…): not followed."""


class TooManyRedirects(HttpFailure):
    """The redirects went on past `MAX_REDIRECTS` (a loop, most likely)."""


class BodyTooLarge(Exception):
    """The response body is larger than the caller's limit."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"larger than {limit} bytes")
        self.limit = limit


class _StaleConnection(Exception):
    """A reused connection failed before any byte of the answer (see the module's notes)."""


@dataclass
class HttpResponse:
    status: int
    headers: dict[str, str] = field(default_factory=dict)  # names in lower case
    body: bytes = b""

    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")

    def json(self) -> Any:
        """The body as JSON; `ValueError` if it is not."""
        return json.loads(self.body)


@dataclass
class _Target:
    scheme: str
    host: str
    port: int
    host_header: str
    path: str

    @property
    def key(self) -> tuple[str, str, int]:
        return self.scheme, self.host, self.port


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.protocol = h11.Connection(h11.CLIENT)
        self.reused = False
        self.idle_since = 0.0

    def usable(self) -> bool:
        # at_eof: the server closed it while it sat idle (a keep-alive timeout).
        fresh = time.monotonic() - self.idle_since <= IDLE_EXPIRY_S
        return fresh and not (self.reader.at_eof() or self.writer.is_closing())

    def close(self) -> None:
        self.writer.close()


class HttpClient:
    """Requests with kept-alive connections; `close()` (or `async with`) ends them."""

    def __init__(
        self, *, ssl_context: ssl.SSLContext | None = None, connect_timeout_s: float = 3.0
    ) -> None:
        # None: verify https against the system's CAs.
        self._ssl_context = ssl_context
        self.connect_timeout_s = connect_timeout_s
        self._idle: defaultdict[tuple[str, str, int], list[_Connection]] = defaultdict(list)
        self._busy: set[_Connection] = set()
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
        target = _parse(url)
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
                following = _parse(url)
                if following.key != target.key:  # the token is for the host it was meant for
                    headers = {k: v for k, v in headers.items() if k.lower() != "authorization"}
                if response.status == 303 or (response.status in (301, 302) and method == "POST"):
                    method, body = "GET", b""
                target = following
        raise TooManyRedirects(f"more than {MAX_REDIRECTS} redirects, the last to {url}")

    async def _send(
        self,
        target: _Target,
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
                response, whole = await self._exchange(
                    connection, method, target, headers, body, max_body
                )
            except _StaleConnection as stale:
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
        self, target: _Target, connect_timeout_s: float | None, address_for: AddressPolicy | None
    ) -> _Connection:
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
        connection = _Connection(reader, writer)
        self._busy.add(connection)
        return connection

    def _tls_context(self) -> ssl.SSLContext:
        if self._ssl_context is None:
            self._ssl_context = ssl.create_default_context()
        return self._ssl_context

    def _release(self, target: _Target, connection: _Connection) -> None:
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

    def _drop_idle(self, target: _Target) -> None:
        for connection in self._idle.pop(target.key, []):
            connection.close()

    def _discard(self, connection: _Connection) -> None:
        self._busy.discard(connection)
        connection.close()

    # ------------------------------------------------------------ one exchange

    async def _exchange(
        self,
        connection: _Connection,
        method: str,
        target: _Target,
        headers: dict[str, str],
        body: bytes,
        max_body: int | None,
    ) -> tuple[HttpResponse, bool]:
        """The answer, and whether its body was read whole (else the connection is spent)."""
        data = _encode_request(connection.protocol, method, target, headers, body)
        answered = False
        try:
            connection.writer.write(data)
            await connection.writer.drain()
            status, response_headers = await self._read_head(connection)
            answered = True
            response_body, whole = await self._read_body(
                connection, method, status, response_headers, max_body
            )
        except (OSError, ssl.SSLError, h11.RemoteProtocolError) as error:
            if connection.reused and not answered:
                self._discard(connection)
                raise _StaleConnection(f"a kept connection failed: {_describe(error)}") from error
            raise HttpFailure(_describe(error)) from error
        return HttpResponse(status, response_headers, response_body), whole

    async def _read_head(self, connection: _Connection) -> tuple[int, dict[str, str]]:
        while True:
            event = await _next_event(connection)
            if isinstance(event, h11.InformationalResponse):
                continue  # 100 Continue and the like
            if isinstance(event, h11.Response):
                headers = {name.decode("latin-1"): value.decode("latin-1")
                           for name, value in event.headers}  # fmt: skip
                return event.status_code, headers
            raise h11.RemoteProtocolError(f"unexpected {type(event).__name__} before a response")

    async def _read_body(
        self,
        connection: _Connection,
        method: str,
        status: int,
        headers: dict[str, str],
        max_body: int | None,
    ) -> tuple[bytes, bool]:
        success = 200 <= status < 300
        has_body = method != "HEAD" and status not in (204, 304)
        if success and has_body and max_body is not None and _declared_length(headers) > max_body:
            raise BodyTooLarge(max_body)  # a claim is enough to refuse; nothing more is read
        limit = max_body if success else ERROR_BODY_CAP
        chunks: list[bytes] = []
        size = 0
        while True:
            event = await _next_event(connection)
            if isinstance(event, h11.Data):
                if limit is not None and size + len(event.data) > limit:
                    if success:
                        raise BodyTooLarge(limit)
                    chunks.append(bytes(event.data)[: limit - size])
                    return b"".join(chunks), False
                size += len(event.data)
                chunks.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                return b"".join(chunks), True
            else:
                raise h11.RemoteProtocolError(f"unexpected {type(event).__name__} in a body")


def _encode_request(
    protocol: h11.Connection, method: str, target: _Target, headers: dict[str, str], body: bytes
) -> bytes:
    request_headers = [("Host", target.host_header), ("User-Agent", USER_AGENT)]
    request_headers += list(headers.items())
    if body or method in ("POST", "PUT", "PATCH"):
        request_headers.append(("Content-Length", str(len(body))))
    try:
        data = protocol.send(h11.Request(method=method, target=target.path,
                                         headers=request_headers)) or b""  # fmt: skip
    except (h11.LocalProtocolError, UnicodeError, ValueError) as error:
        raise HttpFailure(f"cannot send this request: {error}") from error
    if body:
        data += protocol.send(h11.Data(data=body)) or b""
    return data + (protocol.send(h11.EndOfMessage()) or b"")


async def _next_event(connection: _Connection) -> h11.Event | type[h11.PAUSED]:
    protocol = connection.protocol
    while True:
        event = protocol.next_event()
        if event is h11.NEED_DATA:
            # b"" at end of file: h11 then reports the answer as cut short.
            protocol.receive_data(await connection.reader.read(READ_CHUNK))
            continue
        if isinstance(event, h11.ConnectionClosed):
            raise ConnectionResetError("the server closed the connection")
        return cast("h11.Event | type[h11.PAUSED]", event)


def _parse(url: str) -> _Target:
    try:
        parts = urlsplit(url)
    except ValueError as error:
        raise HttpFailure(f"not a URL: {url!r}: {error}") from error
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
        raise HttpFailure(f"not an http(s) URL: {url!r}")
    try:
        port = parts.port or DEFAULT_PORTS[parts.scheme]
        # Never send credentials in Host; a non-ASCII name goes as IDNA.
        host_header = parts.netloc.rpartition("@")[2].encode("idna").decode("ascii")
    except (ValueError, UnicodeError) as error:
        raise HttpFailure(f"bad host or port in {url!r}: {error}") from error
    # Escape what may not appear raw in a request line (a badge named "a b.pdf"),
    # leaving escapes and reserved characters as they are.
    path = quote(parts.path or "/", safe=URL_SAFE)
    if parts.query:
        path += "?" + quote(parts.query, safe=URL_SAFE + "?")
    return _Target(parts.scheme, parts.hostname, port, host_header, path)


def _declared_length(headers: dict[str, str]) -> int:
    try:
        return int(headers.get("content-length", "0"))
    except ValueError:
        return 0  # h11 rejects a malformed length itself


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
