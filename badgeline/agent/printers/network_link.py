"""NetworkLink: a printer (or the emulator) taking raw ESC/POS on a TCP port.

ESC/POS over TCP is nothing but bytes on a socket, so this link writes them
itself rather than through python-escpos (whose import alone costs the agent
about half a second and 10 MB, see ``_escpos``): ``sendall`` for writes,
``recv`` for status replies, as escpos's ``Network`` printer does.

A network printer that is switched off, or an address that is not a printer,
shows up as a connect timeout or as silence after a status query: both are
bounded by the connection's ``timeout_s`` (python-escpos would wait 60 s).

A busy printer is told from a gone one by what TCP itself knows: the bytes
still unacknowledged in the socket's send queue (``SIOCOUTQ``). A printer's
receive window is its free buffer, so while it prints a badge larger than
its buffer the queue drains at print speed: progress. A printer switched off
mid-badge acknowledges nothing: the queue stands still, and after
``stall_timeout_s`` the link calls it gone. (Not ``TCP_USER_TIMEOUT``: Linux
applies it to the probes of a closed window too, and killed connections to a
printer that was printing 30 s badges, its window shut for most of each.)
"""

from __future__ import annotations

import contextlib
import fcntl
import select
import socket
import struct
import termios
import time

from badgeline.agent.printers.connection import EmulatorConnection, NetworkConnection
from badgeline.agent.printers.errors import (
    PrinterLinkError,
    PrinterNotFoundError,
    PrinterTimeoutError,
)
from badgeline.agent.printers.link import MAX_DRAIN_READS, PrinterLink

_DRAIN_CHUNK = 256
# A status reply is one byte; a little more catches a late reply queued behind it.
_REPLY_CHUNK = 16
# SIOCOUTQ (Linux): bytes in the send queue the peer has not acknowledged; the
# same request number as TIOCOUTQ.
_SIOCOUTQ = termios.TIOCOUTQ


class NetworkLink(PrinterLink):
    """A TCP connection to port 9100 (JetDirect/raw) of a printer or of the emulator."""

    def __init__(self, connection: NetworkConnection | EmulatorConnection) -> None:
        super().__init__(f"{connection.kind} printer {connection.host}:{connection.port}")
        self.connection = connection
        self._sock: socket.socket | None = None
        # How many of the bytes sent on this connection the printer had acknowledged
        # at the last look: their growth is the printer's progress.
        self._taken = 0
        self._unacknowledged = 0

    @property
    def timeout_s(self) -> float:
        return self.connection.timeout_s

    @property
    def stall_timeout_s(self) -> float:
        return self.connection.stall_timeout_s

    def backlog(self) -> int:
        return self._unacknowledged

    def bytes_taken(self) -> int:
        self.observe_progress()
        return self._taken

    def observe_progress(self) -> None:
        sock = self._sock
        if sock is None:
            self._unacknowledged = 0
            return
        try:
            raw = fcntl.ioctl(sock.fileno(), _SIOCOUTQ, b"\0\0\0\0")
        except (OSError, ValueError):  # closed meanwhile by another thread
            self._unacknowledged = 0
            return
        self._unacknowledged = struct.unpack("i", raw)[0]
        taken = self._sent - self._unacknowledged
        if taken > self._taken:
            self._taken = taken
            self.note_progress()

    def _open_device(self) -> None:
        # create_connection tries every address (IPv6 too) and closes a socket
        # whose connect failed, so probing a switched-off printer leaks nothing.
        host, port = self.connection.host, self.connection.port
        try:
            # The timeout stays on the socket: it bounds every send and reply wait.
            sock = socket.create_connection((host, port), timeout=self.timeout_s)
        except OSError as error:
            raise PrinterNotFoundError(
                f"cannot connect to {self.description} within {self.timeout_s} s: {error}"
            ) from error
        self._taken = self._unacknowledged = 0
        self._sock = sock

    def still_connected(self) -> bool:
        """False once the printer closed its end or the connection failed (no bytes read:
        a write-only printer sends none, so anything readable is its hang-up)."""
        sock = self._sock
        if sock is None:
            return False
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        if not poller.poll(0):
            return True
        try:
            return bool(sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
        except BlockingIOError:
            return True
        except OSError:
            return False

    def _socket(self) -> socket.socket:
        if self._sock is None:
            raise PrinterLinkError(f"{self.description} is not connected")
        return self._sock

    def _write(self, data: bytes) -> None:
        """Send all of `data`; wait while the printer takes our bytes, fail once it stalls."""
        sock = self._socket()
        view = memoryview(data)
        while view:
            try:
                # With the socket's timeout: waits up to timeout_s for room, sends what fits.
                sent = sock.send(view)
            except TimeoutError:
                self._fail_if_stalled()
                continue
            self._sent += sent
            view = view[sent:]

    def _fail_if_stalled(self) -> None:
        stalled_s = time.monotonic() - self.last_progress_at
        if stalled_s >= self.stall_timeout_s:
            raise PrinterTimeoutError(
                f"{self.description} took none of the agent's bytes for {stalled_s:.0f} s"
                " (switched off, or its cable is out?)"
            )

    def _chunk_taken(self, size: int) -> None:
        """Bytes in our send queue are not the printer's yet: progress is what it acknowledged
        (`_write` counts what it sent)."""
        self.observe_progress()

    def _drain(self) -> bytes:
        sock = self._socket()
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        drained = bytearray()
        for _ in range(MAX_DRAIN_READS):
            # Poll first: a socket with a timeout waits even when given MSG_DONTWAIT.
            if not poller.poll(0):
                break
            if not (data := sock.recv(_DRAIN_CHUNK)):
                raise PrinterLinkError(f"{self.description} closed the connection")
            drained += data
        return bytes(drained)

    def _wait_readable(self, timeout_s: float) -> None:
        poller = select.poll()
        poller.register(self._socket(), select.POLLIN)
        # A hang-up ends the wait too: the next read reports it.
        poller.poll(timeout_s * 1000)

    def _read_reply(self) -> bytes | None:
        try:
            reply = self._socket().recv(_REPLY_CHUNK)
        except TimeoutError:
            return None
        if not reply:
            raise PrinterLinkError(f"{self.description} closed the connection")
        return reply

    def _close_device(self) -> None:
        sock, self._sock = self._sock, None
        if sock is not None:
            # shutdown sends the FIN now, even if another reference keeps the socket open.
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
