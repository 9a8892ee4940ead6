"""NetworkLink against a real TCP printer on loopback."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from badgeline.agent.printers import (
    NetworkConnection,
    NetworkLink,
    PrinterNotFoundError,
    probe_health,
)
from badgeline.protocol.states import PaperLevel

from .servers import TcpPrinter

# Replies on loopback come in microseconds; the long timeout only keeps a loaded
# CI machine from failing the tests that expect a reply. Silence costs the short one.
REPLY_TIMEOUT_S = 2.0
SILENCE_TIMEOUT_S = 0.3
# Every byte value, twice over, with ESC/POS-looking sequences inside.
PAYLOAD = b"\x1b@" + bytes(range(256)) * 256 + b"\x1dV\x00"


def link_to(port: int, timeout_s: float = REPLY_TIMEOUT_S) -> NetworkLink:
    return NetworkLink(NetworkConnection(host="127.0.0.1", port=port, timeout_s=timeout_s))


def test_written_bytes_arrive_exactly(tcp_printer: Callable[..., TcpPrinter]) -> None:
    # GIVEN a printer on TCP
    printer = tcp_printer()
    link = link_to(printer.port)
    # WHEN a badge's bytes are written
    link.write(PAYLOAD)
    # THEN the printer received exactly those bytes
    assert printer.wait_for_bytes(len(PAYLOAD)) == PAYLOAD
    link.close()


def test_probe_of_a_healthy_printer_is_reachable(tcp_printer: Callable[..., TcpPrinter]) -> None:
    # GIVEN a printer with nothing to report
    printer = tcp_printer()
    link = link_to(printer.port)
    # WHEN probed
    report = probe_health(link)
    # THEN it is reachable and clean, after exactly the four DLE EOT queries
    assert report.reachable and not report.jammed and report.paper == PaperLevel.OK
    assert printer.responder.queries == [1, 2, 3, 4]
    link.close()


def test_probe_reports_what_the_printer_says(tcp_printer: Callable[..., TcpPrinter]) -> None:
    # GIVEN a printer whose cutter jammed and whose paper runs low
    printer = tcp_printer()
    printer.status.update({1: 0x1A, 2: 0x52, 3: 0x1A, 4: 0x1E})
    link = link_to(printer.port)
    # WHEN probed
    report = probe_health(link)
    # THEN the report says so
    assert report.reachable and report.jammed and report.paper == PaperLevel.LOW
    link.close()


def test_a_printer_that_never_answers_is_unreachable_without_raising(
    tcp_printer: Callable[..., TcpPrinter],
) -> None:
    # GIVEN a TCP peer that takes bytes but never answers a status query
    printer = tcp_printer()
    printer.responder.answering = False
    link = link_to(printer.port, SILENCE_TIMEOUT_S)
    # WHEN probed
    report = probe_health(link)
    # THEN unreachable with a reason, and the probe gave up after the first silence
    assert report.reachable is False
    assert report.detail is not None and report.detail.startswith("no reply to DLE EOT 1")
    assert printer.responder.queries == [1]
    link.close()


def test_a_partial_answer_is_unreachable(tcp_printer: Callable[..., TcpPrinter]) -> None:
    # GIVEN a printer that answers n=1 but not n=2
    printer = tcp_printer()
    del printer.status[2]
    link = link_to(printer.port, timeout_s=1.0)
    # WHEN probed
    report = probe_health(link)
    # THEN unreachable, naming the silent query; n=3 and n=4 were not sent
    assert report.reachable is False
    assert report.detail is not None and report.detail.startswith("no reply to DLE EOT 2")
    assert printer.responder.queries == [1, 2]
    link.close()


def test_nothing_listening_is_unreachable_and_write_says_why(closed_port: int) -> None:
    # GIVEN an address where no printer listens
    link = link_to(closed_port)
    # WHEN probed, THEN unreachable with the connect failure in the detail
    report = probe_health(link)
    assert report.reachable is False
    assert report.detail is not None and "cannot connect" in report.detail
    # WHEN written to, THEN a PrinterNotFoundError names the address
    with pytest.raises(PrinterNotFoundError, match=f"127.0.0.1:{closed_port}"):
        link.write(b"\x1b@")


def test_a_peer_that_hangs_up_is_unreachable(tcp_printer: Callable[..., TcpPrinter]) -> None:
    # GIVEN something on the port that closes every connection at once
    printer = tcp_printer(hang_up=True)
    link = link_to(printer.port)
    # WHEN probed
    report = probe_health(link)
    # THEN unreachable, not an exception
    assert report.reachable is False
    assert report.detail is not None
    link.close()


def test_the_link_reconnects_after_the_printer_dropped_it(
    tcp_printer: Callable[..., TcpPrinter],
) -> None:
    # GIVEN a link that was talking to a printer which then dropped the connection
    printer = tcp_printer()
    link = link_to(printer.port)
    assert probe_health(link).reachable
    printer.drop_connections()
    # WHEN probed again, THEN the dead connection shows as unreachable
    assert probe_health(link).reachable is False
    # AND the next probe and write reconnect on their own
    assert probe_health(link).reachable is True
    before = len(printer.received())
    link.write(b"again")
    assert printer.wait_for_bytes(before + 5).endswith(b"again")
    assert printer.connections == 2
    link.close()


def test_close_is_idempotent_and_the_link_reopens(tcp_printer: Callable[..., TcpPrinter]) -> None:
    printer = tcp_printer()
    link = link_to(printer.port)
    link.open()
    link.close()
    link.close()
    assert not link.is_open
    link.write(b"x")
    assert link.is_open
    link.close()
