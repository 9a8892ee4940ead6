"""TCP hops between the kiosk and the coordinator, for what a real network does to it.

`AnswerDroppingProxy` can lose an answer: it passes the request on, lets the
coordinator act on it, then drops the connection instead of passing the answer back.
The kiosk cannot tell whether its submission got through, which is the case its
idempotency key is for. `HttpHop` reads each request's head: it counts the kiosk's
calls, cuts or refuses its event streams, and holds an answer back.
"""

from __future__ import annotations

import contextlib
import socket
import threading


class _Hop:
    """A TCP hop to the coordinator: each accepted connection gets an upstream one and
    two threads, `_requests` (kiosk to coordinator) and `_answers` (back), which
    subclasses write; `flag` is an event the two share for that connection."""

    name = "hop"

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, name=self.name, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        # shutdown, not only close: a close leaves the thread blocked in accept() and
        # the port still taking connections.
        _close(self._server)
        with self._lock:
            sockets = list(self._sockets)
        _close(*sockets)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            with self._lock:
                self._sockets += [client, upstream]
            flag = threading.Event()
            threading.Thread(target=self._requests, args=(client, upstream, flag),
                             daemon=True).start()  # fmt: skip
            threading.Thread(target=self._answers, args=(upstream, client, flag),
                             daemon=True).start()  # fmt: skip

    def _requests(self, client: socket.socket, upstream: socket.socket,
                  flag: threading.Event) -> None:  # fmt: skip
        raise NotImplementedError

    def _answers(self, upstream: socket.socket, client: socket.socket,
                 flag: threading.Event) -> None:  # fmt: skip
        raise NotImplementedError


class AnswerDroppingProxy(_Hop):
    name = "proxy"

    def __init__(self, upstream_port: int) -> None:
        self._drops: dict[bytes, int] = {}
        self.dropped: list[bytes] = []
        super().__init__(upstream_port)

    def drop_answer(self, request_line_start: bytes, times: int = 1) -> None:
        """Lose the answers to the next `times` requests whose first line starts so."""
        with self._lock:
            self._drops[request_line_start] = times

    def _armed_for(self, data: bytes) -> bytes | None:
        with self._lock:
            for start, times in self._drops.items():
                if times > 0 and data.startswith(start):
                    self._drops[start] = times - 1
                    return start
        return None

    def _requests(self, client: socket.socket, upstream: socket.socket,
                  swallow: threading.Event) -> None:  # fmt: skip
        with contextlib.suppress(OSError):
            while data := client.recv(65536):
                if (start := self._armed_for(data)) is not None:
                    self.dropped.append(start)
                    swallow.set()
                upstream.sendall(data)
        _close(client, upstream)

    def _answers(self, upstream: socket.socket, client: socket.socket,
                 swallow: threading.Event) -> None:  # fmt: skip
        with contextlib.suppress(OSError):
            while data := upstream.recv(65536):
                if swallow.is_set():
                    break  # the coordinator answered; the kiosk never hears it
                client.sendall(data)
        _close(client, upstream)


def _close(*sockets: socket.socket) -> None:
    for sock in sockets:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            sock.close()


class HttpHop(_Hop):
    """An HTTP hop between the kiosk and the coordinator that reads each request's head:
    it notes every request (method, path, headers), so a test can count the kiosk's
    calls; it can cut the event streams going through it and refuse new ones, and hold
    the answer to a request until told."""

    EVENTS = "/v1/events"
    name = "http-hop"

    def __init__(self, upstream_port: int) -> None:
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self._streams: list[socket.socket] = []  # client sockets of event streams
        self._refusing_streams = False
        self._hold: str | None = None  # "METHOD path-prefix" whose answer waits
        self.released = threading.Event()
        super().__init__(upstream_port)

    def calls(self, method: str, path_prefix: str) -> list[tuple[str, str, dict[str, str]]]:
        with self._lock:
            return [r for r in self.requests if r[0] == method and r[1].startswith(path_prefix)]

    def refuse_streams(self, refusing: bool = True) -> None:
        """Close each new event stream's connection as soon as its request comes."""
        self._refusing_streams = refusing

    def cut_streams(self) -> None:
        """Drop the connection of every event stream open through the hop."""
        with self._lock:
            streams, self._streams = self._streams, []
        _close(*streams)

    def hold_answer(self, method: str, path_prefix: str) -> None:
        """Hold the answer to the next such request until `released` is set."""
        self._hold = f"{method} {path_prefix}"

    def close(self) -> None:
        self.released.set()
        super().close()

    def _requests(self, client: socket.socket, upstream: socket.socket,
                  holding: threading.Event) -> None:  # fmt: skip
        buffer = b""
        with contextlib.suppress(OSError):
            while True:
                while b"\r\n\r\n" not in buffer:
                    data = client.recv(65536)
                    if not data:
                        raise OSError("the kiosk closed the connection")
                    buffer += data
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                method, path, headers = _parse_head(head)
                with self._lock:
                    self.requests.append((method, path, headers))
                if path.startswith(self.EVENTS):
                    if self._refusing_streams:
                        break
                    with self._lock:
                        self._streams.append(client)
                if self._hold is not None and f"{method} {path}".startswith(self._hold):
                    self._hold = None
                    holding.set()
                length = int(headers.get("content-length", "0"))
                while len(buffer) < length:
                    data = client.recv(65536)
                    if not data:
                        raise OSError("the kiosk closed the connection")
                    buffer += data
                body, buffer = buffer[:length], buffer[length:]
                upstream.sendall(head + b"\r\n\r\n" + body)
        _close(client, upstream)

    def _answers(self, upstream: socket.socket, client: socket.socket,
                 holding: threading.Event) -> None:  # fmt: skip
        with contextlib.suppress(OSError):
            while data := upstream.recv(65536):
                if holding.is_set():
                    self.released.wait(30)
                client.sendall(data)
        _close(client, upstream)


def _parse_head(head: bytes) -> tuple[str, str, dict[str, str]]:
    request_line, *lines = head.decode("latin-1").split("\r\n")
    method, path, _ = request_line.split(" ", 2)
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return method, path, headers
