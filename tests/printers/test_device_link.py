"""DeviceLink on a real pseudo-terminal (talks back) and a real FIFO (write-only)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from badgeline.agent.printers import (
    DeviceConnection,
    DeviceLink,
    PrinterNotFoundError,
    PrinterTimeoutError,
    probe_health,
)
from badgeline.protocol.states import PaperLevel

from .servers import FdPrinter

REPLY_TIMEOUT_S = 2.0  # generous so a loaded machine still gets its replies in time
SILENCE_TIMEOUT_S = 0.3
# Every byte value, including the ones a tty would rewrite or swallow if left
# cooked: LF (0x0A, becomes CR LF), CR, ^C (0x03), XON/XOFF (0x11/0x13), ^D.
PAYLOAD = b"\x1b@" + bytes(range(256)) * 200 + b"\x1dV\x00"


def link_to(path: str | Path, timeout_s: float = REPLY_TIMEOUT_S) -> DeviceLink:
    return DeviceLink(DeviceConnection(path=str(path), timeout_s=timeout_s))


def test_bytes_written_to_a_tty_arrive_exactly(pty_printer: tuple[str, FdPrinter]) -> None:
    # GIVEN a printer behind a tty device node
    path, printer = pty_printer
    link = link_to(path)
    # WHEN a badge's bytes are written
    link.write(PAYLOAD)
    # THEN they arrive unchanged (the link put the tty in raw mode)
    assert printer.wait_for_bytes(len(PAYLOAD)) == PAYLOAD
    link.close()


def test_status_is_read_back_on_the_same_descriptor(pty_printer: tuple[str, FdPrinter]) -> None:
    # GIVEN a bidirectional device whose printer is out of paper
    path, printer = pty_printer
    printer.status.update({1: 0x1A, 2: 0x32, 4: 0x7E})
    link = link_to(path)
    # WHEN probed
    report = probe_health(link)
    # THEN the replies came back and were mapped
    assert link.can_read_status
    assert report.reachable and report.paper == PaperLevel.OUT
    assert printer.responder.queries == [1, 2, 3, 4]
    link.close()


def test_a_silent_device_is_unreachable(pty_printer: tuple[str, FdPrinter]) -> None:
    # GIVEN a readable device whose printer never answers
    path, printer = pty_printer
    printer.responder.answering = False
    # WHEN probed
    report = probe_health(link := link_to(path, SILENCE_TIMEOUT_S))
    # THEN unreachable after the first silent query, not an exception
    assert report.reachable is False
    assert report.detail is not None and report.detail.startswith("no reply to DLE EOT 1")
    link.close()


def test_bytes_written_to_a_fifo_arrive_exactly(fifo_printer: tuple[str, FdPrinter]) -> None:
    # GIVEN a write-only device node (a FIFO) with a reader at the other end
    path, printer = fifo_printer
    link = link_to(path)
    # WHEN a badge is written, larger than the pipe's buffer
    link.write(PAYLOAD)
    # THEN every byte arrives, in order
    assert printer.wait_for_bytes(len(PAYLOAD)) == PAYLOAD
    link.close()


def test_a_write_only_node_reports_status_unknown(fifo_printer: tuple[str, FdPrinter]) -> None:
    # GIVEN a node that cannot give status back
    path, printer = fifo_printer
    link = link_to(path)
    # WHEN probed
    report = probe_health(link)
    # THEN it opened (so reachable) but the report says the status is unknown,
    # and no query bytes were sent into the print stream
    assert link.can_read_status is False
    assert report.reachable is True
    assert report.detail is not None and report.detail.startswith("status unknown")
    assert printer.received() == b""
    link.close()


def test_a_device_that_stops_taking_data_times_out(fifo_path: Path) -> None:
    # GIVEN a reader that never reads (a printer that stopped, out of paper)
    reader = os.open(fifo_path, os.O_RDONLY | os.O_NONBLOCK)
    # (a printer is gone once it takes nothing for its stall timeout: shortened here)
    link = DeviceLink(DeviceConnection(path=str(fifo_path), timeout_s=SILENCE_TIMEOUT_S,
                                       stall_timeout_s=SILENCE_TIMEOUT_S))  # fmt: skip
    try:
        # WHEN more is written than the pipe can buffer
        # THEN the write gives up with a timeout instead of hanging the print loop
        with pytest.raises(PrinterTimeoutError, match="took no data"):
            link.write(b"\x00" * (4 << 20))
        assert not link.is_open
    finally:
        link.close()
        os.close(reader)


def test_a_missing_device_node_is_not_found(tmp_path: Path) -> None:
    link = link_to(tmp_path / "lp9")
    with pytest.raises(PrinterNotFoundError, match="plugged in"):
        link.write(b"x")
    report = probe_health(link)
    assert report.reachable is False
    assert report.detail is not None and "does not exist" in report.detail


def test_a_fifo_without_a_reader_is_not_found(fifo_path: Path) -> None:
    # GIVEN a FIFO nobody reads (like a device node with no hardware behind it)
    # WHEN opened, THEN a clear not-found error instead of a blocked open
    with pytest.raises(PrinterNotFoundError, match="nothing is attached"):
        link_to(fifo_path).open()
