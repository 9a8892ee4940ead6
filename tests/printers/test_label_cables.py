"""Label printers on every cable but TCP (test_zpl.py and test_brother_ql.py have TCP): a
Zebra and a Brother QL over USB (pyusb, through the fake backend below it) and behind a
device node (a pseudo-terminal that talks back). On each, a badge arrives whole and is
confirmed by the printer's own word: a Zebra's `~HS` showing nothing left (about 80
bytes, more than one 64-byte USB packet), a Brother's unasked "printing completed"."""

from __future__ import annotations

import asyncio
from typing import Any

from PIL import Image

from badgeline.agent.printers import (
    AsyncPrinterLink,
    DeviceConnection,
    UsbConnection,
    link_for,
)
from badgeline.agent.printers.brother_ql import BrotherQlFamily
from badgeline.agent.printers.brother_ql.encoder import raster_job
from badgeline.agent.printers.brother_ql.media import ql_media
from badgeline.agent.printers.completion import Completion, Outcome
from badgeline.agent.printers.family import PrinterFamily
from badgeline.agent.printers.zpl import ZplFamily
from badgeline.protocol.states import PaperLevel

from .fake_usb import FakeUsbPrinterBackend
from .label_printers import BrotherResponder, ZebraResponder
from .servers import FdPrinter
from .test_zpl import KNOWN_FORMAT

ZEBRA_USB = {"vendor_id": 0x0A5F, "product_id": 0x0181, "language": "zpl", "model": "ZD421"}
BROTHER_USB = {"vendor_id": 0x04F9, "product_id": 0x209D, "language": "brother_ql",
               "media": "62x100"}  # fmt: skip
DIE_CUT = ql_media("QL-820NWB", "62x100")


def zebra() -> ZplFamily:
    return ZplFamily.configured(model="ZD421", label_length_dots=609)


def ql_label() -> bytes:
    image = Image.new("1", (696, 1109), 1)
    return raster_job(image.tobytes(), image.size, DIE_CUT)


def usb_printer(ids: dict[str, Any], responder: object) -> FakeUsbPrinterBackend:
    backend = FakeUsbPrinterBackend(ids["vendor_id"], ids["product_id"])
    backend.responder = responder  # type: ignore[assignment]
    return backend


def over_usb(backend: FakeUsbPrinterBackend, ids: dict[str, Any], family: PrinterFamily) -> Any:
    connection = UsbConnection(**ids, timeout_ms=500)
    return AsyncPrinterLink(link_for(connection, usb_backend=backend, family=family), family)


def over_device(path: str, language: str, family: PrinterFamily) -> AsyncPrinterLink:
    connection = DeviceConnection(path=path, timeout_s=0.5, language=language)  # type: ignore[arg-type]
    return AsyncPrinterLink(link_for(connection, family=family), family)


async def printed(link: AsyncPrinterLink, data: bytes, within_s: float = 5.0) -> Completion:
    """Send one badge and wait for its confirmation."""
    mark = await link.send_marked(data)
    async with asyncio.timeout(within_s):
        while (completion := await link.poll_printed(mark, 0.02)) is None:
            pass
    return completion


async def test_a_zebra_on_usb_prints_a_label_and_confirms_it_by_host_status() -> None:
    # GIVEN a Zebra on USB (Zebra's vendor id), out of paper for now, and its link
    responder = ZebraResponder(paper_out=True)
    backend = usb_printer(ZEBRA_USB, responder)
    link = over_usb(backend, ZEBRA_USB, zebra())
    # WHEN it is probed, then paper is loaded and a label sent and waited for
    report = await link.probe()
    responder.paper_out = False
    completion = await printed(link, KNOWN_FORMAT)
    # THEN the ~HS answers were read whole over 64-byte packets: the probe saw the
    # paper out, the label went whole and was confirmed by the printer's word
    assert report.reachable and report.paper is PaperLevel.OUT
    assert completion.outcome is Outcome.PRINTED and responder.printed == 1
    assert KNOWN_FORMAT in backend.written_bytes()
    await link.close()


async def test_a_zebra_behind_a_device_node_prints_a_label_and_confirms_it(
    pty_printer: tuple[str, FdPrinter],
) -> None:
    # GIVEN a Zebra behind a tty device node that answers on the same descriptor
    path, printer = pty_printer
    printer.responder = ZebraResponder()  # type: ignore[assignment]
    link = over_device(path, "zpl", zebra())
    # WHEN a label is sent and waited for
    completion = await printed(link, KNOWN_FORMAT)
    # THEN it arrived byte for byte and ~HS confirmed it
    assert completion.outcome is Outcome.PRINTED
    assert printer.responder.printed == 1  # type: ignore[attr-defined]
    assert printer.received().startswith(KNOWN_FORMAT)
    await link.close()


async def test_a_brother_on_usb_prints_a_label_and_confirms_it_by_printing_completed() -> None:
    # GIVEN a QL on USB (Brother's vendor id) and its link
    responder = BrotherResponder()
    backend = usb_printer(BROTHER_USB, responder)
    family = BrotherQlFamily(DIE_CUT)
    link = over_usb(backend, BROTHER_USB, family)
    # WHEN a raster job is sent and waited for
    job = ql_label()
    completion = await printed(link, job)
    # THEN the whole job went out and the QL's own notice (32 bytes, read in one
    # packet) confirmed the page
    assert completion.outcome is Outcome.PRINTED and responder.printed == 1
    assert backend.written_bytes() == job
    await link.close()


async def test_a_brother_behind_a_device_node_prints_a_label_and_an_error_is_a_fault(
    pty_printer: tuple[str, FdPrinter],
) -> None:
    # GIVEN a QL behind a tty device node
    path, printer = pty_printer
    responder = BrotherResponder()
    printer.responder = responder  # type: ignore[assignment]
    link = over_device(path, "brother_ql", BrotherQlFamily(DIE_CUT))
    # WHEN one page prints, and the next ends in "error occurred"
    first = await printed(link, ql_label())
    responder.fail_next_page = True
    second = await printed(link, ql_label())
    # THEN the first is confirmed by "printing completed", the second is a fault
    assert first.outcome is Outcome.PRINTED and second.outcome is Outcome.FAULT
    assert responder.printed == 1
    assert printer.received() == ql_label() * 2
    await link.close()
