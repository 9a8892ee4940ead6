"""The kiosk's HTTP client: the standard library's http.client, one kept-alive
connection per coordinator URL, the replicas tried in turn.

Every call the kiosk makes is safe to repeat (an upload is content-addressed, a
submission carries its idempotency key, a reprint its request_id), so a request
whose answer was lost is simply sent again; a kept-alive connection the server
closed meanwhile is retried once on a fresh one before the replica counts as away.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import ssl
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

USER_AGENT = "badgeline-kiosk/0.1"


@dataclass(frozen=True)
class Answer:
    """The coordinator's answer: status, the JSON body (or None), Retry-After in seconds."""

    status: int
    body: Any
    retry_after_s: float | None
    url: str

    @property
    def error_code(self) -> str:
        error = self.body.get("error") if isinstance(self.body, dict) else None
        return str(error.get("code")) if isinstance(error, dict) else f"http_{self.status}"

    @property
    def error_message(self) -> str:
        error = self.body.get("error") if isinstance(self.body, dict) else None
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        return f"HTTP {self.status} from {self.url}"


@dataclass(frozen=True)
class Stream:
    """An answer read as it comes (open_stream), on a connection of its own."""

    url: str
    connection: http.client.HTTPConnection
    response: http.client.HTTPResponse

    def interrupt(self) -> None:
        """From another thread: a read blocked on the stream returns at once."""
        sock = self.connection.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        """By the thread that reads it."""
        self.response.close()
        self.connection.close()


class CoordinatorAway(Exception):
    """No coordinator URL answered (refused, reset, timed out, TLS failed)."""


class Replicas:
    """The coordinator URLs, shared by the kiosk's threads; `current` is the one that
    answered last. mDNS discovery may put a found address first (`prefer`)."""

    def __init__(self, urls: Sequence[str]) -> None:
        self._urls = list(urls)
        self._current = 0
        self._lock = threading.Lock()

    def in_turn(self) -> list[str]:
        """Every URL, the current one first."""
        with self._lock:
            return self._urls[self._current :] + self._urls[: self._current]

    def answered(self, url: str) -> None:
        with self._lock:
            if url in self._urls:
                self._current = self._urls.index(url)

    def prefer(self, url: str) -> None:
        with self._lock:
            if url in self._urls:
                self._urls.remove(url)
            self._urls.insert(0, url)
            self._current = 0


def ssl_context(ca_file: Path | None) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(ca_file) if ca_file else None)


class CoordinatorClient:
    """One thread's client (not thread-safe: each kiosk thread has its own)."""

    def __init__(
        self, replicas: Replicas, token: str, *, tls: ssl.SSLContext | None,
        connect_timeout_s: float, request_timeout_s: float,
    ) -> None:  # fmt: skip
        self._replicas = replicas
        self._token = token
        self._tls = tls
        self._connect_timeout_s = connect_timeout_s
        self._request_timeout_s = request_timeout_s
        self._connections: dict[str, http.client.HTTPConnection] = {}

    def close(self) -> None:
        for connection in self._connections.values():
            connection.close()
        self._connections.clear()

    def call(self, method: str, path: str, body: Any = None, *,
             content_type: str = "application/json") -> Answer:  # fmt: skip
        """Send to each URL in turn until one answers; CoordinatorAway when none does."""
        data = body if body is None or isinstance(body, bytes) else json.dumps(body).encode()
        failures = []
        for url in self._replicas.in_turn():
            try:
                answer = self._send(url, method, path, data, content_type)
            except (OSError, http.client.HTTPException) as error:
                failures.append(f"{url}: {error or type(error).__name__}")
                continue
            self._replicas.answered(url)
            return answer
        raise CoordinatorAway("; ".join(failures))

    def open_stream(self, path: str, headers: dict[str, str], idle_timeout_s: float) -> Stream:
        """GET a long answer (the job event stream) on a connection of its own, from each
        URL in turn: the first that answers, whatever its status. A read waits up to
        `idle_timeout_s` for the next bytes. CoordinatorAway when none answers."""
        failures = []
        for url in self._replicas.in_turn():
            connection = None
            try:
                connection = self._open(url)
                if connection.sock is not None:
                    connection.sock.settimeout(idle_timeout_s)
                connection.request("GET", path, headers={**self._headers(), **headers})
                response = connection.getresponse()
            except (OSError, http.client.HTTPException) as error:
                if connection is not None:
                    connection.close()
                failures.append(f"{url}: {error or type(error).__name__}")
                continue
            self._replicas.answered(url)
            return Stream(url, connection, response)
        raise CoordinatorAway("; ".join(failures))

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._token}", "User-Agent": USER_AGENT}

    def _send(self, url: str, method: str, path: str, data: bytes | None,
              content_type: str) -> Answer:  # fmt: skip
        headers = self._headers()
        if data is not None:
            headers["Content-Type"] = content_type
        for fresh in (False, True):
            connection = self._connection(url, fresh)
            try:
                connection.request(method, path, body=data, headers=headers)
                response = connection.getresponse()
                payload = response.read()
            except (ConnectionResetError, BrokenPipeError, http.client.RemoteDisconnected):
                connection.close()
                if fresh:
                    raise
                continue  # a kept-alive connection the server had closed: once more, anew
            except (OSError, http.client.HTTPException):
                connection.close()
                raise
            if response.will_close:
                connection.close()
            return Answer(response.status, json_body(payload), retry_after_s(response), url)
        raise AssertionError("unreachable")

    def _connection(self, url: str, fresh: bool) -> http.client.HTTPConnection:
        connection = self._connections.get(url)
        if connection is not None and not fresh:
            return connection
        if connection is not None:
            connection.close()
        connection = self._open(url)
        self._connections[url] = connection
        return connection

    def _open(self, url: str) -> http.client.HTTPConnection:
        parts = urlsplit(url)
        connection = (
            http.client.HTTPSConnection(parts.hostname or "", parts.port,
                                        timeout=self._connect_timeout_s, context=self._tls)
            if parts.scheme == "https"
            else http.client.HTTPConnection(parts.hostname or "", parts.port,
                                            timeout=self._connect_timeout_s)
        )  # fmt: skip
        connection.connect()
        # Connected within the connect timeout; an answer may take longer.
        if connection.sock is not None:
            connection.sock.settimeout(self._request_timeout_s)
            connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return connection


def json_body(payload: bytes) -> Any:
    try:
        return json.loads(payload) if payload else None
    except ValueError:
        return None


def retry_after_s(response: http.client.HTTPResponse) -> float | None:
    value = response.getheader("Retry-After")
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None  # an HTTP date: the coordinator sends seconds; fall back to the back-off
