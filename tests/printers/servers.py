"""Real test printers: a TCP one and one on a file descriptor (pty master, FIFO).

Both record every byte they receive and, when they can talk back, answer
DLE EOT queries from a settable status. They run in threads, so the code
under test can block on them from a test (sync) or from a worker thread
(async) alike. Tests wait on their conditions with a timeout, never sleep.
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import threading
from collections.abc import Callable

from .dle_eot import StatusResponder

WAIT_S = 5.0  # generous: only reached when a test is about to fail
_POLL_S = 0.05  # how often the worker threads look for a stop request


class _Recorder:
    def __init__(self) -> None:
        self.responder = StatusResponder()
        self._received = bytearray()
        self._changed = threading.Condition()

    @property
    def status(self) -> dict[int, int]:
        return self.responder.status

    def received(self) -> bytes:
        with self._changed:
            return bytes(self._received)

    def wait_for_bytes(self, count: int, timeout: float = WAIT_S) -> bytes:
        with self._changed:
            if not self._changed.wait_for(lambda: len(self._received) >= count, timeout):
                raise AssertionError(
                    f"printer got {len(self._received)} bytes, expected {count} within {timeout}s"
                )
            return bytes(self._received)

    def wait_for_stream(self, predicate: Callable[[bytes], bool], timeout: float = WAIT_S) -> bytes:
        """What was received, once `predicate` holds for it."""
        with self._changed:
            if not self._changed.wait_for(lambda: predicate(bytes(self._received)), timeout):
                raise AssertionError(f"printer got {len(self._received)} bytes, not what was due")
            return bytes(self._received)

    def _record(self, data: bytes) -> bytes:
        with self._changed:
            self._received += data
            replies = self.responder.feed(data)
            self._changed.notify_all()
        return replies


class TcpPrinter(_Recorder):
    """A printer on a loopback TCP port. ``hang_up`` closes each connection on accept."""

    def __init__(self, *, hang_up: bool = False) -> None:
        super().__init__()
        self.hang_up = hang_up
        self.connections = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(_POLL_S)
        self.port: int = self._listener.getsockname()[1]
        self._stopping = threading.Event()
        self._sockets: list[socket.socket] = []
        self._threads = [threading.Thread(target=self._accept_loop, daemon=True)]
        self._threads[0].start()

    def drop_connections(self) -> None:
        """Close every open connection, as a printer that is switched off and on does."""
        for sock in list(self._sockets):
            # shutdown sends the FIN now; close alone waits for the serving thread's recv.
            with contextlib.suppress(OSError):  # already gone
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def close(self) -> None:
        self._stopping.set()
        for thread in list(self._threads):
            thread.join(WAIT_S)
        self._listener.close()
        self.drop_connections()

    def _accept_loop(self) -> None:
        while not self._stopping.is_set():
            try:
                sock, _ = self._listener.accept()
            except TimeoutError:
                continue
            self.connections += 1
            if self.hang_up:
                sock.close()
                continue
            sock.settimeout(_POLL_S)
            self._sockets.append(sock)
            thread = threading.Thread(target=self._serve, args=(sock,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _serve(self, sock: socket.socket) -> None:
        while not self._stopping.is_set():
            try:
                data = sock.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                return  # closed by drop_connections
            if not data:
                return
            replies = self._record(data)
            if replies:
                sock.sendall(replies)


class FdPrinter(_Recorder):
    """A printer at the far end of a file descriptor (a pty master, a FIFO's read end).

    ``talks_back`` writes DLE EOT replies to the same descriptor, which is how a
    pty master answers the program on the slave side.
    """

    def __init__(self, fd: int, *, talks_back: bool) -> None:
        super().__init__()
        self.fd = fd
        self.talks_back = talks_back
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._read_loop, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stopping.set()
        self._thread.join(WAIT_S)

    def _read_loop(self) -> None:
        poller = select.poll()
        poller.register(self.fd, select.POLLIN)
        while not self._stopping.is_set():
            if not poller.poll(_POLL_S * 1000):
                continue
            try:
                data = os.read(self.fd, 65536)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                return  # EIO: the other side of the pty closed; nothing more will come
            if not data:
                # A FIFO reports end-of-file while no writer has it open: wait for one.
                self._stopping.wait(_POLL_S)
                continue
            replies = self._record(data)
            if replies and self.talks_back:
                os.write(self.fd, replies)
