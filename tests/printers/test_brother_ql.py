"""The Brother QL family: a badge's exact raster job, read back by brother-ql-next's own
reader, every status condition, media checks, and the print confirmation over a socket
and over pyusb (a test QL: label_printers.BrotherResponder)."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable
from pathlib import Path

import pytest
from brother_ql.reader import BrotherQLReader, interpret_response
from PIL import Image, ImageChops, ImageDraw

from badgeline.agent.printers import (
    AsyncPrinterLink,
    EmulatorConnection,
    UsbConnection,
    UsbLink,
    link_for,
)
from badgeline.agent.printers.brother_ql import BrotherQlFamily
from badgeline.agent.printers.brother_ql.encoder import raster_job
from badgeline.agent.printers.brother_ql.media import ql_media
from badgeline.agent.printers.brother_ql.status import health_from_status, parse_status
from badgeline.agent.printers.completion import Completion, Outcome
from badgeline.protocol.states import PaperLevel

from .fake_usb import FakeUsbPrinterBackend
from .label_printers import BrotherResponder, ql_status
from .servers import TcpPrinter

# A 12 mm tape job of four rows: the leftmost dot, the rightmost dot, a blank row, all dots.
# Each row is mirrored into the line after the roll's 29 margin pins (of 720).
KNOWN_HEADER = bytes.fromhex(
    "1b40 1b696101 1b692100 1b697a 860a0c00 04000000 00001b694d40 1b694101 1b694b08 1b69642300"
)
KNOWN_LINES = [
    "00" * 16 + "02" + "00" * 73,
    "000000" + "04" + "00" * 86,
    "00" * 90,
    "00000007" + "ff" * 12 + "fe" + "00" * 73,
]
KNOWN_JOB = (
    b"\x00" * 400
    + KNOWN_HEADER
    + b"".join(b"g\x00\x5a" + bytes.fromhex(line) for line in KNOWN_LINES)
    + b"\x1a"
)
DIE_CUT = ql_media("QL-820NWB", "62x100")


def known_rows() -> Image.Image:
    image = Image.new("1", (106, 4), 1)
    image.putpixel((0, 0), 0)
    image.putpixel((105, 1), 0)
    ImageDraw.Draw(image).line((0, 3, 105, 3), fill=0)
    return image


def test_a_known_badge_is_this_raster_job_exactly() -> None:
    # GIVEN four known rows on 12 mm tape in a QL-820NWB
    image = known_rows()
    # WHEN they are encoded
    job = raster_job(image.tobytes(), image.size, ql_media("QL-820NWB", "12"))
    # THEN the job is: invalidate, initialise, raster mode, notify, print information
    # (continuous, 12 mm, 4 lines), auto cut, cut each label, cut at end, 35-dot feed,
    # the four mirrored lines, print with feeding
    assert job == KNOWN_JOB


def test_brother_ql_next_reads_the_label_back(tmp_path: Path) -> None:
    # GIVEN a badge-like picture on a 62 x 100 mm die-cut label
    image = Image.new("1", (696, 1109), 1)
    ImageDraw.Draw(image).rectangle((40, 60, 300, 500), fill=0)
    ImageDraw.Draw(image).line((0, 1000, 695, 1000), fill=0, width=5)
    job = raster_job(image.tobytes(), image.size, DIE_CUT)
    # WHEN brother-ql-next (PyPI), an independent reader, analyses the job
    reader = BrotherQLReader(io.BufferedReader(io.BytesIO(job)))  # type: ignore[arg-type]
    reader.filename_fmt = str(tmp_path / "label{counter:04d}.png")
    reader.analyse()
    page = Image.open(tmp_path / "label0001.png").convert("L")
    # THEN it saw the 62 mm media and the page is the picture, at the roll's pins
    assert reader.mwidth == 62 and reader.raster_no == 1109
    left = 720 - 12 - 696
    label = page.crop((left, 0, left + 696, 1109))
    assert ImageChops.difference(label, image.convert("L")).getbbox() is None


def test_the_test_printer_s_status_frames_read_as_brother_s_own_reader_reads_them() -> None:
    frame = ql_status(kind=0x01, width_mm=62, length_mm=100)
    read = interpret_response(frame)
    assert read["status_type"] == "Printing completed"
    assert parse_status(frame).media == "62x100 mm die-cut"


@pytest.mark.parametrize(
    ("errors", "expected", "detail"),
    [
        ((0, 0), {}, None),
        ((0x01, 0), {"paper": PaperLevel.OUT}, "no media"),
        ((0x02, 0), {"paper": PaperLevel.OUT}, "end of media"),
        ((0x04, 0), {"jammed": True}, "cutter jam"),
        ((0, 0x10), {"cover_open": True}, "cover open"),
        ((0, 0x40), {"jammed": True}, "media cannot be fed"),
        ((0, 0x80), {"jammed": True}, "system error"),
        ((0, 0x01), {"paper": PaperLevel.OUT}, "replace media"),
        ((0x20, 0), {}, "printer turned off"),
        ((0, 0x02), {}, "expansion buffer full"),
    ],
)
def test_each_error_bit_maps_to_its_health_field(
    errors: tuple[int, int], expected: dict[str, object], detail: str | None
) -> None:
    # GIVEN a status with one error bit set, the configured roll loaded
    status = parse_status(ql_status(errors=errors))
    # WHEN it is mapped
    report = health_from_status(status, DIE_CUT)
    # THEN the report carries that condition and says it
    defaults = {"reachable": True, "jammed": False, "cover_open": False,
                "paper": PaperLevel.OK, "ribbon_pct": None, "paused": None}  # fmt: skip
    assert report.model_dump(exclude={"detail"}) == {**defaults, **expected}
    assert report.detail == detail


@pytest.mark.parametrize(
    ("loaded", "detail"),
    [
        (
            {"media_type": 0x0A, "length_mm": 0},
            "62 mm continuous is loaded, printer.media is 62x100",
        ),
        ({"length_mm": 29}, "62x29 mm die-cut is loaded, printer.media is 62x100"),
        ({"model": 0x44}, "the printer is a QL-1110NWB, printer.model is QL-820NWB"),
    ],
)
def test_a_roll_or_printer_other_than_configured_stops_printing(
    loaded: dict[str, int], detail: str
) -> None:
    # GIVEN a printer reporting media (or a head) other than the configured one
    report = health_from_status(parse_status(ql_status(**loaded)), DIE_CUT)
    # THEN it cannot print (the badge would misprint), and the detail says what is loaded
    assert report.paper is PaperLevel.OUT
    assert detail in (report.detail or "")


# ---------------------------------------------------------------- over a socket and USB


def brother(
    tcp_printer: Callable[..., TcpPrinter], **state: object
) -> tuple[TcpPrinter, AsyncPrinterLink]:
    printer = tcp_printer()
    printer.responder = BrotherResponder(**state)  # type: ignore[assignment,arg-type]
    family = BrotherQlFamily(DIE_CUT)
    # An emulator connection: badgeline's emulator answers on TCP, a real QL does not.
    connection = EmulatorConnection(host="127.0.0.1", port=printer.port, timeout_s=0.3,
                                    language="brother_ql", media="62x100")  # fmt: skip
    return printer, AsyncPrinterLink(link_for(connection, family=family), family)


def blank_label() -> bytes:
    image = Image.new("1", (696, 1109), 1)
    return raster_job(image.tobytes(), image.size, DIE_CUT)


async def wait_for(link: AsyncPrinterLink, mark: object, within_s: float = 5.0) -> Completion:
    async with asyncio.timeout(within_s):
        while (completion := await link.poll_printed(mark, 0.05)) is None:
            pass
    return completion


async def test_a_label_is_confirmed_by_the_printer_s_printing_completed(
    tcp_printer: Callable[..., TcpPrinter],
) -> None:
    printer, link = brother(tcp_printer)
    mark = await link.send_marked(blank_label())
    assert (await wait_for(link, mark)).outcome is Outcome.PRINTED
    assert printer.responder.printed == 1  # type: ignore[attr-defined]
    await link.close()


async def test_an_error_before_the_label_is_out_is_a_fault(
    tcp_printer: Callable[..., TcpPrinter],
) -> None:
    # GIVEN a QL whose next page ends in "error occurred" (it clears the page)
    _, link = brother(tcp_printer, fail_next_page=True)
    mark = await link.send_marked(blank_label())
    # THEN the wait ends in a fault: the badge is uncertain, never printed
    assert (await wait_for(link, mark)).outcome is Outcome.FAULT
    await link.close()


async def test_a_notice_of_an_earlier_page_does_not_confirm_the_next(
    tcp_printer: Callable[..., TcpPrinter],
) -> None:
    # GIVEN a label confirmed, and a second one the printer is still printing
    printer, link = brother(tcp_printer)
    assert (await wait_for(link, await link.send_marked(blank_label()))).printed
    responder: BrotherResponder = printer.responder  # type: ignore[assignment]
    responder.holding = True
    mark = await link.send_marked(blank_label())
    # THEN the second waits, and is confirmed only by its own notice
    for _ in range(5):
        assert await link.poll_printed(mark, 0.05) is None
    responder.holding = False
    assert (await wait_for(link, mark)).outcome is Outcome.PRINTED
    assert responder.printed == 2
    await link.close()


async def test_a_silent_printer_ends_the_wait_as_silent(
    tcp_printer: Callable[..., TcpPrinter],
) -> None:
    _, link = brother(tcp_printer, holding=True, answering=False)
    mark = await link.send_marked(blank_label())
    assert (await wait_for(link, mark)).outcome is Outcome.SILENT
    await link.close()


async def test_the_probe_reads_the_status_over_pyusb_in_whole_frames(
    fake_usb: FakeUsbPrinterBackend,
) -> None:
    # GIVEN a QL on USB (Brother's vendor id) with its cover open
    fake_usb.responder = BrotherResponder(errors=(0, 0x10))  # type: ignore[assignment]
    family = BrotherQlFamily(DIE_CUT)
    connection = UsbConnection(vendor_id=fake_usb.vendor_id, product_id=fake_usb.product_id,
                               language="brother_ql", media="62x100")  # fmt: skip
    link = AsyncPrinterLink(link_for(connection, usb_backend=fake_usb, family=family), family)
    assert isinstance(link.link, UsbLink) and link.link.reply_chunk == 64
    # WHEN it is probed
    report = await link.probe()
    # THEN the 32-byte status was read whole and mapped
    assert report.reachable and report.cover_open and report.detail == "cover open"
    await link.close()
