"""Print completion (GS ( H process ID responses) over real links: TCP and the fake USB device."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

import pytest

from badgeline.agent.printers import (
    AsyncPrinterLink,
    DeviceConnection,
    DeviceLink,
    NetworkConnection,
    NetworkLink,
    UsbLink,
)
from badgeline.agent.printers.completion import (
    Outcome,
    ReplySorter,
    await_process_id,
    poll_process_id,
    process_id_request,
)
from badgeline.agent.printers.link import LinkIo, PrinterLink
from badgeline.agent.printers.realtime_status import probe_health

from .fake_usb import FakeUsbPrinterBackend
from .servers import WAIT_S, FdPrinter, TcpPrinter
from .test_usb_link import EPSON

BADGE = b"\x1b@badge\n\x1dV\x00"
RESPONSE = b"\x37\x22" + b"0427" + b"\x00"


def link_to(port: int, timeout_s: float = 2.0) -> NetworkLink:
    return NetworkLink(NetworkConnection(host="127.0.0.1", port=port, timeout_s=timeout_s))


@pytest.mark.parametrize("split", range(1, len(RESPONSE) + 1))
def test_sorter_tells_responses_from_status_bytes_wherever_the_reads_split(split: int) -> None:
    # GIVEN a status byte, a response whose ID digits look like status bytes ("2"
    # is 0x32), a second status byte, and noise, arriving in two reads
    stream = b"\x12" + b"\x37\x22" + b"2222" + b"\x00" + b"\x1a" + b"\xff"
    sorter = ReplySorter()
    # WHEN fed
    sorter.feed(stream[:split])
    sorter.feed(stream[split:])
    # THEN one response and exactly the two status bytes came out
    assert sorter.process_ids == [b"2222"]
    assert sorter.status == [0x12, 0x1A]


def test_a_badge_is_confirmed_by_the_printers_process_id_response(
    tcp_printer: Callable[..., TcpPrinter],
) -> None:
    # GIVEN a TCP printer that answers GS ( H, and a badge written to it
    printer = tcp_printer()
    link = link_to(printer.port)
    link.write(BADGE)
    # WHEN the agent waits for the completion
    completion = link.converse(lambda io: await_process_id(io, b"0427", within_s=2.0))
    # THEN the printer's response confirmed it, after the badge's bytes
    assert completion.outcome is Outcome.PRINTED
    assert printer.responder.process_ids == [b"0427"]
    assert printer.received().index(b"\x1d(H\x06\x0000" + b"0427") > printer.received().index(BADGE)
    link.close()


def test_a_printer_without_gs_h_times_out_while_online(
    tcp_printer: Callable[..., TcpPrinter],
) -> None:
    # GIVEN a healthy printer that ignores GS ( H
    printer = tcp_printer()
    printer.responder.process_id_support = False
    link = link_to(printer.port)
    # WHEN the agent waits for a completion, briefly
    completion = link.converse(lambda io: await_process_id(io, b"0001", within_s=0.3))
    # THEN it timed out (the printer kept saying it was online meanwhile)
    assert completion.outcome is Outcome.TIMED_OUT
    assert len(printer.responder.queries) >= 2
    link.close()


def test_a_printer_that_goes_offline_is_a_fault_not_a_wait(
    tcp_printer: Callable[..., TcpPrinter],
) -> None:
    # GIVEN a printer out of paper (offline bit set) that never answers GS ( H
    printer = tcp_printer()
    printer.responder.process_id_support = False
    printer.status[1] = 0x1A
    link = link_to(printer.port)
    # WHEN the agent waits for a completion with a long deadline
    completion = link.converse(lambda io: await_process_id(io, b"0001", within_s=60))
    # THEN the first status poll ends the wait
    assert completion.outcome is Outcome.FAULT
    link.close()


def test_a_silent_printer_ends_the_wait(tcp_printer: Callable[..., TcpPrinter]) -> None:
    # GIVEN a printer that answers nothing at all
    printer = tcp_printer()
    printer.responder.answering = False
    link = link_to(printer.port, timeout_s=0.3)
    # WHEN the agent waits for a completion
    completion = link.converse(lambda io: await_process_id(io, b"0001", within_s=60))
    # THEN silence ends it within the link's timeout, as SILENT
    assert completion.outcome is Outcome.SILENT
    link.close()


async def test_the_fake_usb_printer_answers_gs_h_through_pyusb(
    fake_usb: FakeUsbPrinterBackend,
) -> None:
    # GIVEN the fake USB printer behind python-escpos and pyusb
    link = AsyncPrinterLink(UsbLink(EPSON, backend=fake_usb))
    # WHEN the agent prints a badge and waits for it
    process_id = await link.send_marked(BADGE)
    completion = None
    async with asyncio.timeout(5):
        while completion is None:
            completion = await link.poll_printed(process_id, pause_s=0.05)
    # THEN the badge was confirmed by the printer's response to the agent's request
    assert completion.outcome is Outcome.PRINTED
    assert len(fake_usb.responder.process_ids) == 1
    await link.close()


@pytest.mark.parametrize("kind", ["tcp", "tty"])
def test_waiting_for_a_reply_ends_when_the_reply_arrives(
    kind: str,
    tcp_printer: Callable[..., TcpPrinter],
    pty_printer: tuple[str, FdPrinter],
) -> None:
    # GIVEN a link whose printer has been asked for its status (the reply is on its way)
    link: PrinterLink
    if kind == "tcp":
        link = link_to(tcp_printer().port)
    else:
        link = DeviceLink(DeviceConnection(path=pty_printer[0], timeout_s=2.0))
    waited = threading.Event()

    def exchange(io: LinkIo) -> bytes:
        io.write(b"\x10\x04\x01")
        # WHEN the completion wait pauses between polls, with a pause far longer than the test
        io.wait(600)
        waited.set()
        return io.receive()

    worker = threading.Thread(target=lambda: link.converse(exchange), daemon=True)
    worker.start()
    # THEN the pause ends as soon as the reply is there (a badge is confirmed when the
    # printer answers, not at the next poll), and the reply is still there to read
    assert waited.wait(WAIT_S)
    worker.join(WAIT_S)
    link.close()


def test_a_status_probe_between_polls_keeps_the_process_id_response(
    tcp_printer: Callable[..., TcpPrinter],
) -> None:
    # GIVEN a badge written with its process ID request, whose response is already waiting
    printer = tcp_printer()
    link = link_to(printer.port)
    link.write(BADGE + process_id_request(b"0427"))
    printer.wait_for_bytes(len(BADGE) + len(process_id_request(b"0427")))
    # WHEN a status probe runs before the wait polls (it drains stale replies first)
    assert probe_health(link).reachable
    # THEN the wait still finds its response: pipelined badges lose no confirmation
    completion = link.converse(lambda io: poll_process_id(io, b"0427", pause_s=0))
    assert completion is not None and completion.outcome is Outcome.PRINTED
    link.close()
