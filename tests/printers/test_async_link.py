"""AsyncPrinterLink: blocking links driven from asyncio without blocking the loop."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable

from badgeline.agent.printers import (
    AsyncPrinterLink,
    NetworkConnection,
    UsbConnection,
    UsbLink,
    link_for,
)
from badgeline.protocol.states import PaperLevel

from .fake_usb import FakeUsbPrinterBackend
from .servers import TcpPrinter

REPLY_TIMEOUT_S = 2.0  # generous so a loaded machine still gets its replies in time
SILENCE_TIMEOUT_S = 0.3


def network(port: int, timeout_s: float = REPLY_TIMEOUT_S) -> AsyncPrinterLink:
    connection = NetworkConnection(host="127.0.0.1", port=port, timeout_s=timeout_s)
    return AsyncPrinterLink(link_for(connection))


async def test_probe_and_write_from_asyncio(tcp_printer: Callable[..., TcpPrinter]) -> None:
    # GIVEN a printer whose paper runs low
    printer = tcp_printer()
    printer.status[4] = 0x1E
    # WHEN the agent writes and probes through the async facade
    async with network(printer.port) as link:
        await link.write(b"\x1b@badge\x1dV\x00")
        report = await link.probe()
        reply = await link.read_status(b"\x10\x04\x04")
    # THEN all of it went over the one connection
    queries = b"\x10\x04\x01\x10\x04\x02\x10\x04\x03\x10\x04\x04" + b"\x10\x04\x04"
    expected = b"\x1b@badge\x1dV\x00" + queries
    assert printer.wait_for_bytes(len(expected)) == expected
    assert report.reachable and report.paper == PaperLevel.LOW
    assert reply == b"\x1e"
    assert not link.link.is_open


async def test_concurrent_writes_and_probes_never_interleave(
    tcp_printer: Callable[..., TcpPrinter],
) -> None:
    # GIVEN several badges and probes started at once on one link
    printer = tcp_printer()
    badges = [bytes([letter]) * 20_000 for letter in b"ABCDEF"]
    link = network(printer.port)
    # WHEN they all run concurrently
    results = await asyncio.gather(
        *(link.write(badge) for badge in badges), *(link.probe() for _ in range(4))
    )
    await link.close()
    # THEN every probe succeeded (a probe while a badge was being written reports the
    # printer busy without a query of its own) and each badge arrived in one piece:
    # with the status queries taken out, the stream is six unbroken runs
    reports = [result for result in results if result is not None]
    assert len(reports) == 4 and all(report.reachable for report in reports)

    def without_queries(stream: bytes) -> bytes:
        for n in (1, 2, 3, 4):
            stream = stream.replace(b"\x10\x04" + bytes([n]), b"")
        return stream

    # Every query was answered, so only badge bytes can still be on their way.
    badge_bytes = sum(map(len, badges))
    stream = without_queries(printer.wait_for_stream(
        lambda received: len(without_queries(received)) >= badge_bytes))  # fmt: skip
    runs = sorted(bytes(group) for _, group in itertools.groupby(stream))
    assert runs == badges


async def test_a_silent_printer_does_not_block_the_event_loop(
    tcp_printer: Callable[..., TcpPrinter],
) -> None:
    # GIVEN a printer that never answers
    printer = tcp_printer()
    printer.responder.answering = False
    link = network(printer.port, SILENCE_TIMEOUT_S)
    ticks = 0

    async def heartbeat() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.01)

    # WHEN probed while another task keeps running
    beating = asyncio.create_task(heartbeat())
    report = await link.probe()
    beating.cancel()
    await link.close()
    # THEN the probe reports unreachable and the other task ran meanwhile
    assert report.reachable is False
    assert ticks > 1


async def test_probe_never_raises_on_a_missing_usb_printer() -> None:
    # GIVEN a USB link to a printer that is not plugged in
    empty_bus = FakeUsbPrinterBackend(vendor_id=0x0001)
    link = AsyncPrinterLink(
        UsbLink(UsbConnection(vendor_id=0x04B8, product_id=0x0202), backend=empty_bus)
    )
    # WHEN probed, THEN a report, not an exception
    report = await link.probe()
    assert report.reachable is False
    assert report.detail is not None and "not found" in report.detail


async def test_a_bare_process_id_check_tells_support_silence_and_offline_apart(
    tcp_printer: Callable[..., TcpPrinter],
) -> None:
    # GIVEN a printer that answers GS ( H, one that ignores it, and one that went silent
    knows, ignores, silent = tcp_printer(), tcp_printer(), tcp_printer()
    ignores.responder.process_id_support = False
    silent.responder.answering = False
    # WHEN the agent sends each a bare process ID request
    answers = []
    for printer in (knows, ignores, silent):
        async with network(printer.port, timeout_s=SILENCE_TIMEOUT_S) as link:
            answers.append(await link.answers_process_id(within_s=1.0))
    # THEN only the online printer that stays silent is taken not to know GS ( H
    assert answers == [True, False, None]
