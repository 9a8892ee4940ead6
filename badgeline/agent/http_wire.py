"""One HTTP/1.1 exchange over h11: the request's bytes, the answer's head and body.

The agent's HTTP client (http_client.py) keeps connections and follows
redirects; this module is what happens on one connection: a URL parsed into
what goes on the wire, a request encoded, and the answer read with its limits
(a success's body by the caller's `max_body`, an error's by `ERROR_BODY_CAP`).
"""

from __future__ import annotations

import asyncio
import json
import ssl
import time
from dataclasses import dataclass, field
from typing import Any, cast
from urllib.parse import quote, urlsplit

import h11

READ_CHUNK = 64 * 1024
# A connection idle longer is closed, not reused: a NAT or a Wi-Fi roam may have
# dropped it without a word, and the next request would wait out its timeout
# (aiohttp's client keeps 15 s too).
IDLE_EXPIRY_S = 15.0
# How much of an error answer's body is read; beyond it the body is cut.
ERROR_BODY_CAP = 64 * 1024
DEFAULT_PORTS = {"http": 80, "https": 443}
USER_AGENT = "badgeline-agent"
# Characters a URL path or query keeps unescaped (RFC 3986 reserved and unreserved, and %).
URL_SAFE = "/%:@!$&'()*+,;=-._~"


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


class StaleConnection(Exception):
    """A reused connection failed before any byte of the answer (see http_client.py)."""


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
class Target:
    scheme: str
    host: str
    port: int
    host_header: str
    path: str

    @property
    def key(self) -> tuple[str, str, int]:
        return self.scheme, self.host, self.port


class Connection:
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


async def exchange(
    connection: Connection,
    method: str,
    target: Target,
    headers: dict[str, str],
    body: bytes,
    max_body: int | None,
) -> tuple[HttpResponse, bool]:
    """The answer, and whether its body was read whole (else the connection is spent).

    A reused connection that fails before any byte of the answer raises
    `StaleConnection`: the caller closes it and may send the request once more.
    """
    data = encode_request(connection.protocol, method, target, headers, body)
    answered = False
    try:
        connection.writer.write(data)
        await connection.writer.drain()
        status, response_headers = await _read_head(connection)
        answered = True
        response_body, whole = await _read_body(
            connection, method, status, response_headers, max_body
        )
    except (OSError, ssl.SSLError, h11.RemoteProtocolError) as error:
        if connection.reused and not answered:
            raise StaleConnection(f"a kept connection failed: {_describe(error)}") from error
        raise HttpFailure(_describe(error)) from error
    return HttpResponse(status, response_headers, response_body), whole


async def _read_head(connection: Connection) -> tuple[int, dict[str, str]]:
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
    connection: Connection,
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


def encode_request(
    protocol: h11.Connection, method: str, target: Target, headers: dict[str, str], body: bytes
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


async def _next_event(connection: Connection) -> h11.Event | type[h11.PAUSED]:
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


def parse_url(url: str) -> Target:
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
    return Target(parts.scheme, parts.hostname, port, host_header, path)


def _declared_length(headers: dict[str, str]) -> int:
    try:
        return int(headers.get("content-length", "0"))
    except ValueError:
        return 0  # h11 rejects a malformed length itself


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
