"""Fixtures that start real test printers and always clean up after them."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .fake_usb import FakeUsbPrinterBackend
from .servers import FdPrinter, TcpPrinter


@pytest.fixture
def tcp_printer() -> Iterator[Callable[..., TcpPrinter]]:
    """Factory: ``tcp_printer(hang_up=False)`` starts a printer on a loopback port."""
    started: list[TcpPrinter] = []

    def start(**options: Any) -> TcpPrinter:
        printer = TcpPrinter(**options)
        started.append(printer)
        return printer

    yield start
    for printer in started:
        printer.close()


@pytest.fixture
def closed_port() -> int:
    """A loopback port nobody listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.fixture
def fake_usb() -> FakeUsbPrinterBackend:
    return FakeUsbPrinterBackend()


@pytest.fixture
def pty_printer() -> Iterator[tuple[str, FdPrinter]]:
    """A printer on the master side of a pseudo-terminal; the link opens the slave path."""
    master, slave = os.openpty()
    path = os.ttyname(slave)
    printer = FdPrinter(master, talks_back=True)
    yield path, printer
    printer.close()
    os.close(slave)
    os.close(master)


@pytest.fixture
def fifo_path(tmp_path: Path) -> Path:
    path = tmp_path / "lp0"
    os.mkfifo(path)
    return path


@pytest.fixture
def fifo_printer(fifo_path: Path) -> Iterator[tuple[str, FdPrinter]]:
    """A printer reading a FIFO (a stand-in for a write-only device node)."""
    reader = os.open(fifo_path, os.O_RDONLY | os.O_NONBLOCK)
    printer = FdPrinter(reader, talks_back=False)
    yield str(fifo_path), printer
    printer.close()
    os.close(reader)
