"""The ZPL family: a badge's exact label format, every ~HS and ~HQES condition, and the
print confirmation over a real socket (a test Zebra: label_printers.ZebraResponder)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest
from PIL import Image, ImageChops, ImageDraw
from zebrafy import ZebrafyZPL

from badgeline.agent.printers import AsyncPrinterLink, NetworkConnection, link_for
from badgeline.agent.printers.completion import Completion, Outcome
from badgeline.agent.printers.zpl import ZplFamily
from badgeline.agent.printers.zpl.encoder import label_format, z64
from badgeline.agent.printers.zpl.replies import ZplReplies
from badgeline.agent.printers.zpl.status import (
    frames,
    health_from_host_status,
    health_from_printer_status,
    parse_host_status,
    parse_printer_status,
)
from badgeline.badge.layout import LabelLayout
from badgeline.protocol.states import PaperLevel

from .label_printers import ZebraResponder
from .servers import TcpPrinter

# A 64 x 80 dot label: a 16-dot square, a line across at row 63, the footer band below.
KNOWN_FORMAT = (
    b"^XA^JZY^PW64^LH0,0^FO0,0^GFA,46,640,8,:Z64:eNpjYKAQ/P8/sPQoIDPaIGCg3QEANggn2Q==:A04C^FS"
    b"^FO0,66^A0N,11,11^FB64,1,0,C,0^FDjob j-1^FS^PQ1^XZ"
)


def known_label() -> Image.Image:
    image = Image.new("1", (64, 80), 1)
    draw = ImageDraw.Draw(image)
    draw.rectangle((8, 8, 23, 23), fill=0)
    draw.line((0, 63, 63, 63), fill=0)
    return image


def test_a_known_badge_is_this_label_format_exactly() -> None:
    # GIVEN a known label picture on a 64 x 80 label with a 16-dot footer band
    image = known_label()
    # WHEN it is encoded
    encoded = label_format(image.tobytes(), image.size, LabelLayout(64, 80, 16), "job j-1")
    # THEN it is these bytes: reprint after error, width, home, the Z64 field, the footer
    assert encoded == KNOWN_FORMAT


@pytest.mark.parametrize("width", [64, 70])
def test_an_independent_decoder_reads_the_badge_s_dots_back(width: int) -> None:
    # GIVEN a picture whose width is (or is not) a whole number of bytes
    image = Image.new("1", (width, 72), 1)
    ImageDraw.Draw(image).ellipse((4, 4, width - 5, 60), outline=0, width=3)
    # WHEN it is encoded and zebrafy (PyPI) turns the ^GF back into a picture
    encoded = label_format(image.tobytes(), image.size, LabelLayout(width, 72))
    decoded = ZebrafyZPL(encoded.decode("ascii")).to_images()[0].convert("1")
    # THEN the dots are the picture's, and the padding past its right edge is white
    assert ImageChops.difference(decoded.crop((0, 0, width, 72)).convert("L"),
                                 image.convert("L")).getbbox() is None  # fmt: skip
    if decoded.width > width:
        assert decoded.crop((width, 0, decoded.width, 72)).convert("L").getextrema() == (255, 255)


def test_z64_carries_the_crc_of_its_base64_text() -> None:
    # GIVEN the Z64 text of some dots
    text = z64(b"\x00\xff" * 40)
    # THEN it is :Z64:<base64>:<CRC-16/XMODEM of the base64, four hex digits>
    import binascii

    head, encoded, crc = text[1:].split(":")
    assert head == "Z64" and int(crc, 16) == binascii.crc_hqx(encoded.encode(), 0)


def test_a_footer_that_would_smuggle_commands_is_refused() -> None:
    image = known_label()
    with pytest.raises(ValueError, match="without"):
        label_format(image.tobytes(), image.size, LabelLayout(64, 80, 16), "job ^XZ")


def host_status(**fields: bool | int) -> bytes:
    responder = ZebraResponder(**fields)  # type: ignore[arg-type]
    return responder.feed(b"~HS")


@pytest.mark.parametrize(
    ("fields", "expected", "detail"),
    [
        ({}, {}, None),
        ({"paper_out": True}, {"paper": PaperLevel.OUT}, "paper out"),
        ({"paused": True}, {"paused": True}, "paused"),
        ({"head_up": True}, {"cover_open": True}, "head open"),
        ({"ribbon_out": True}, {"ribbon_pct": 0}, "ribbon out"),
    ],
    ids=["all clear", "paper out", "paused", "head open", "ribbon out"],
)
def test_each_host_status_flag_maps_to_its_health_field(
    fields: dict[str, bool], expected: dict[str, object], detail: str | None
) -> None:
    # GIVEN a Zebra's ~HS answer with one condition set
    found, _ = frames(host_status(**fields))
    # WHEN it is read
    report = health_from_host_status(parse_host_status(found[0], found[1]), None)
    # THEN the report carries that condition, and says it
    defaults = {"reachable": True, "jammed": False, "cover_open": False,
                "paper": PaperLevel.OK, "ribbon_pct": None, "paused": False}  # fmt: skip
    assert report.model_dump(exclude={"detail"}) == {**defaults, **expected}
    assert report.detail == detail


def test_labels_shorter_than_the_configured_length_stop_the_printer() -> None:
    # GIVEN a Zebra whose labels are 406 dots long, configured for 609
    found, _ = frames(host_status(label_length=406))
    # WHEN its status is read
    report = health_from_host_status(parse_host_status(found[0], found[1]), 609)
    # THEN it cannot print (the badge would run onto the next label), and says why
    assert report.paper is PaperLevel.OUT
    assert "shorter than printer.label_length_dots = 609" in (report.detail or "")


@pytest.mark.parametrize(
    ("errors", "warnings", "expected", "detail"),
    [
        (0x1, 0, {"paper": PaperLevel.OUT}, "media out"),
        (0x2, 0, {"ribbon_pct": 0}, "ribbon out"),
        (0x4, 0, {"cover_open": True}, "head open"),
        (0x8, 0, {"jammed": True}, "cutter fault"),
        (0x10000, 0, {"paused": True}, "paused"),
        (0x10, 0, {}, "printhead over temperature"),
        (0, 0x8, {"paper": PaperLevel.LOW}, "paper near end"),
        (0, 0x2, {}, "clean the printhead"),
    ],
)
def test_each_printer_status_bit_maps_to_its_health_field(
    errors: int, warnings: int, expected: dict[str, object], detail: str
) -> None:
    # GIVEN a ~HQES answer with one error or warning bit set
    answer = ZebraResponder(errors=errors, warnings=warnings).feed(b"~HQES")
    # WHEN it is read
    report = health_from_printer_status(parse_printer_status(frames(answer)[0][0]))
    # THEN the report carries that condition, and says it
    defaults = {"reachable": True, "jammed": False, "cover_open": False,
                "paper": PaperLevel.OK, "ribbon_pct": None, "paused": False}  # fmt: skip
    assert report.model_dump(exclude={"detail"}) == {**defaults, **expected}
    assert report.detail == detail


def test_an_answer_to_a_query_sent_before_the_badge_never_confirms_it() -> None:
    # GIVEN a ~HS asked, then a badge marked (its wait looks past that query)
    replies = ZplReplies()
    replies.asked(b"~HS")
    mark = replies.host_status_asked
    # WHEN the earlier query's answer arrives, saying nothing is left to print
    replies.feed(host_status())
    # THEN it does not confirm the badge; an answer to a query after it does
    assert not replies.done_after(mark)
    replies.asked(b"~HS")
    replies.feed(host_status())
    assert replies.done_after(mark)


# ---------------------------------------------------------------- over a socket


def zebra(
    tcp_printer: Callable[..., TcpPrinter], **state: object
) -> tuple[TcpPrinter, AsyncPrinterLink]:
    printer = tcp_printer()
    printer.responder = ZebraResponder(**state)  # type: ignore[assignment,arg-type]
    family = ZplFamily.configured(model="ZD421", label_length_dots=609)
    connection = NetworkConnection(host="127.0.0.1", port=printer.port, timeout_s=0.3,
                                   language="zpl")  # fmt: skip
    return printer, AsyncPrinterLink(link_for(connection, family=family), family)


async def wait_for(link: AsyncPrinterLink, mark: object, within_s: float = 5.0) -> Completion:
    async with asyncio.timeout(within_s):
        while (completion := await link.poll_printed(mark, 0.05)) is None:
            pass
    return completion


async def test_a_label_is_confirmed_once_host_status_shows_nothing_left(
    tcp_printer: Callable[..., TcpPrinter],
) -> None:
    # GIVEN a Zebra that prints at once
    printer, link = zebra(tcp_printer)
    # WHEN a badge is sent and waited for
    mark = await link.send_marked(KNOWN_FORMAT)
    completion = await wait_for(link, mark)
    # THEN the printer's ~HS said it was out
    assert completion.outcome is Outcome.PRINTED
    assert printer.responder.printed == 1  # type: ignore[attr-defined]
    await link.close()


async def test_a_label_held_by_a_fault_is_confirmed_when_it_prints_after_all(
    tcp_printer: Callable[..., TcpPrinter],
) -> None:
    # GIVEN a Zebra out of paper that holds its labels (and keeps quiet to ~HS meanwhile)
    printer, link = zebra(tcp_printer, holding=True, paper_out=True, errors=0x1,
                          silent_in_faults=True)  # fmt: skip
    responder: ZebraResponder = printer.responder  # type: ignore[assignment]
    mark = await link.send_marked(KNOWN_FORMAT)
    # WHEN the agent polls while the fault lasts
    for _ in range(10):
        assert await link.poll_printed(mark, 0.05) is None  # held, not lost: no outcome
    # AND paper is loaded, so the held label prints
    responder.paper_out, responder.errors = False, 0
    responder.release()
    # THEN the badge is confirmed by the printer's word
    assert (await wait_for(link, mark)).outcome is Outcome.PRINTED
    await link.close()


async def test_a_poll_answered_at_once_still_waits_out_its_pause(
    tcp_printer: Callable[..., TcpPrinter],
) -> None:
    # GIVEN a Zebra printing a label, which answers ~HS at once all the while
    printer, link = zebra(tcp_printer, holding=True)
    mark = await link.send_marked(KNOWN_FORMAT)
    # WHEN the agent polls five times with a 0.1 s pause
    started = time.monotonic()
    for _ in range(5):
        assert await link.poll_printed(mark, 0.1) is None
    # THEN each poll asked one ~HS and took its whole pause: the agent does not ask
    # as fast as the printer answers
    assert time.monotonic() - started >= 5 * 0.1
    assert printer.responder.queries == [b"~HS"] * 5  # type: ignore[attr-defined]
    await link.close()


async def test_a_zebra_that_answers_nothing_ends_the_wait_as_silent(
    tcp_printer: Callable[..., TcpPrinter],
) -> None:
    # GIVEN a Zebra that takes the label and then answers neither ~HS nor ~HQES
    printer, link = zebra(tcp_printer, holding=True)
    mark = await link.send_marked(KNOWN_FORMAT)
    printer.responder.answering = False  # type: ignore[attr-defined]
    # THEN the wait ends SILENT (the badge will be uncertain)
    assert (await wait_for(link, mark)).outcome is Outcome.SILENT
    await link.close()


async def test_the_probe_reads_host_status_and_printer_status_together(
    tcp_printer: Callable[..., TcpPrinter],
) -> None:
    # GIVEN a Zebra with a cutter fault (only ~HQES says so) and paper near end
    _, link = zebra(tcp_printer, errors=0x8, warnings=0x8)
    # WHEN it is probed
    report = await link.probe()
    # THEN both answers are in the report
    assert report.reachable and report.jammed and report.paper is PaperLevel.LOW
    assert report.detail == "cutter fault; paper near end"
    await link.close()


async def test_a_printer_answering_in_another_language_is_named(
    tcp_printer: Callable[..., TcpPrinter],
) -> None:
    # GIVEN a "Zebra" that is really a Brother QL (it answers anything with its status)
    printer, link = zebra(tcp_printer)

    class Brother:
        def feed(self, data: bytes) -> bytes:
            return b"\x80\x20\x42\x34" + bytes(28) if data else b""

    printer.responder = Brother()  # type: ignore[assignment]
    # WHEN it is probed
    report = await link.probe()
    # THEN it is unreachable, and the detail says which setting to change
    assert not report.reachable
    assert 'set printer.language = "brother_ql"' in (report.detail or "")
    await link.close()
