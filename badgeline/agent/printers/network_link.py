"""NetworkLink: a printer (or the emulator) taking raw ESC/POS on a TCP port, via escpos Network.

A network printer that is switched off, or an address that is not a printer,
shows up as a connect timeout or as silence after a status query: both are
bounded by the connection's ``timeout_s`` (python-escpos would wait 60 s).
"""

from __future__ import annotations

import select
import socket
from typing import Any

from badgeline.agent.printers._escpos import escpos_api
from badgeline.agent.printers.connection import EmulatorConnection, NetworkConnection
from badgeline.agent.printers.errors import PrinterLinkError, PrinterNotFoundError
from badgeline.agent.printers.link import MAX_DRAIN_READS, PrinterLink

_DRAIN_CHUNK = 256


class NetworkLink(PrinterLink):
    """A TCP connection to port 9100 (JetDirect/raw) of a printer or of the emulator."""

    def __init__(self, connection: NetworkConnection | EmulatorConnection) -> None:
        super().__init__(f"{connection.kind} printer {connection.host}:{connection.port}")
        self.connection = connection
        self._printer: Any = None

    @property
    def timeout_s(self) -> float:
        return self.connection.timeout_s

    def _open_device(self) -> None:
        # We connect the socket ourselves and hand it to escpos's Network: its own
        # open() is IPv4-only and leaks the socket (a ResourceWarning) when the
        # connect fails, which is every probe of a switched-off printer.
        host, port = self.connection.host, self.connection.port
        try:
            sock = socket.create_connection((host, port), timeout=self.timeout_s)
        except OSError as error:
            raise PrinterNotFoundError(
                f"cannot connect to {self.description} within {self.timeout_s} s: {error}"
            ) from error
        printer = escpos_api().printer.Network(host=host, port=port, timeout=self.timeout_s)
        printer.device = sock
        self._printer = printer

    def _socket(self) -> socket.socket:
        sock: socket.socket = self._printer.device
        return sock

    def _write(self, data: bytes) -> None:
        self._printer._raw(data)

    def _drain(self) -> None:
        sock = self._socket()
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        for _ in range(MAX_DRAIN_READS):
            # Poll first: a socket with a timeout waits even when given MSG_DONTWAIT.
            if not poller.poll(0):
                return
            if not sock.recv(_DRAIN_CHUNK):
                raise PrinterLinkError(f"{self.description} closed the connection")

    def _read_reply(self) -> bytes | None:
        try:
            # escpos's Network._read: recv(16) under the socket timeout set at open.
            reply: bytes = self._printer._read()
        except TimeoutError:
            return None
        if not reply:
            raise PrinterLinkError(f"{self.description} closed the connection")
        return reply

    def _close_device(self) -> None:
        printer, self._printer = self._printer, None
        if printer is not None:
            printer.close()
