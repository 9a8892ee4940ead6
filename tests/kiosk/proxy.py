"""A TCP hop between the kiosk and the coordinator that can lose an answer: it passes
the request on, lets the coordinator act on it, then drops the connection instead of
passing the answer back. The kiosk cannot tell whether its submission got through,
which is the case its idempotency key is for."""

from __future__ import annotations

import contextlib
import socket
import threading


class AnswerDroppingProxy:
    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self._drops: dict[bytes, int] = {}
        self.dropped: list[bytes] = []
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, name="proxy", daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def drop_answer(self, request_line_start: bytes, times: int = 1) -> None:
        """Lose the answers to the next `times` requests whose first line starts so."""
        with self._lock:
            self._drops[request_line_start] = times

    def close(self) -> None:
        # shutdown, not only close: a close leaves the thread blocked in accept() and
        # the port still taking connections.
        _close(self._server)
        for sock in self._sockets:
            with contextlib.suppress(OSError):
                sock.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            self._sockets += [client, upstream]
            swallow = threading.Event()
            threading.Thread(target=self._requests, args=(client, upstream, swallow),
                             daemon=True).start()  # fmt: skip
            threading.Thread(target=self._answers, args=(upstream, client, swallow),
                             daemon=True).start()  # fmt: skip

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
