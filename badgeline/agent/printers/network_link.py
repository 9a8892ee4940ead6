"""NetworkLink: a printer (or the emulator) taking raw ESC/POS on a TCP port.

ESC/POS over TCP is nothing but bytes on a socket, so this link writes them
itself rather than through python-escpos (whose import alone costs the agent
about half a second and 10 MB, see ``_escpos``): ``sendall`` for writes,
``recv`` for status replies, as escpos's ``Network`` printer does.

A network printer that is switched off, or an address that is not a printer,
shows up as a connect timeout or as silence after a status query: both are
bounded by the connection's ``timeout_s`` (python-escpos would wait 60 s).
"""

from __future__ import annotations

import contextlib
import select
import socket

from badgeline.agent.printers.connection import EmulatorConnection, NetworkConnection
from badgeline.agent.printers.errors import PrinterLinkError, PrinterNotFoundError
from badgeline.agent.printers.link import MAX_DRAIN_READS, PrinterLink

_DRAIN_CHUNK = 256
# A status reply is one byte; a little more catches a late reply queued behind it.
_REPLY_CHUNK = 16


class NetworkLink(PrinterLink):
    """A TCP connection to port 9100 (JetDirect/raw) of a printer or of the emulator."""

    def __init__(self, connection: NetworkConnection | EmulatorConnection) -> None:
        super().__init__(f"{connection.kind} printer {connection.host}:{connection.port}")
        self.connection = connection
        self._sock: socket.socket | None = None

    @property
    def timeout_s(self) -> float:
        return self.connection.timeout_s

    def _open_device(self) -> None:
        # create_connection tries every address (IPv6 too) and closes a socket
        # whose connect failed, so probing a switched-off printer leaks nothing.
        host, port = self.connection.host, self.connection.port
        try:
            # The timeout stays on the socket: it bounds every send and reply wait.
            self._sock = socket.create_connection((host, port), timeout=self.timeout_s)
        except OSError as error:
            raise PrinterNotFoundError(
                f"cannot connect to {self.description} within {self.timeout_s} s: {error}"
            ) from error

    def _socket(self) -> socket.socket:
        if self._sock is None:
            raise PrinterLinkError(f"{self.description} is not connected")
        return self._sock

    def _write(self, data: bytes) -> None:
        self._socket().sendall(data)

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
