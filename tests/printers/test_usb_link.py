"""UsbLink (and python-escpos's Usb) through the fake pyusb backend."""

from __future__ import annotations

import errno

import pytest
import usb.core
import usb.util

from badgeline.agent.printers import (
    PrinterAccessError,
    PrinterLinkError,
    PrinterNotFoundError,
    UsbConnection,
    UsbLink,
    probe_health,
)
from badgeline.agent.printers._escpos import escpos_api
from badgeline.protocol.states import PaperLevel

from .fake_usb import FakeUsbPrinterBackend

EPSON = UsbConnection(vendor_id=0x04B8, product_id=0x0202, timeout_ms=500)
PAYLOAD = b"\x1b@" + bytes(range(256)) * 256 + b"\x1dV\x00"


# ------------------------------------------------------------------ the fake itself


def test_the_fake_enumerates_one_printer_through_pyusb(fake_usb: FakeUsbPrinterBackend) -> None:
    # WHEN pyusb looks for the printer's ids on the fake bus
    device = usb.core.find(backend=fake_usb, idVendor=0x04B8, idProduct=0x0202)
    # THEN it finds one printer-class interface with bulk OUT 0x01 and bulk IN 0x82
    assert device is not None
    interface = device[0][(0, 0)]
    assert interface.bInterfaceClass == 7
    assert [endpoint.bEndpointAddress for endpoint in interface] == [0x01, 0x82]
    assert all(
        usb.util.endpoint_type(endpoint.bmAttributes) == usb.util.ENDPOINT_TYPE_BULK
        for endpoint in interface
    )
    # AND other ids are not there
    assert usb.core.find(backend=fake_usb, idVendor=0x0519) is None
    usb.util.dispose_resources(device)


def test_escpos_usb_prints_and_reads_status_through_the_fake(
    fake_usb: FakeUsbPrinterBackend,
) -> None:
    # GIVEN python-escpos's own Usb printer, given the backend inside usb_args
    printer = escpos_api().printer.Usb(0x04B8, 0x0202, usb_args={"backend": fake_usb}, timeout=500)
    # WHEN it prints text and asks for status
    printer.text("Ada Lovelace\n")
    online = printer.is_online()
    fake_usb.status[4] = 0x1E
    paper = printer.paper_status()
    printer.close()
    # THEN the text reached the OUT endpoint and the replies came back on IN
    # (escpos selects code page 0 with ESC t 0 before the first text)
    assert fake_usb.written_bytes() == b"\x1bt\x00Ada Lovelace\n\x10\x04\x01\x10\x04\x04"
    assert online is True
    assert paper == 1  # escpos: near end
    assert fake_usb.configuration_value == 1 and fake_usb.resets == 1


# ------------------------------------------------------------------ UsbLink


def test_written_bytes_arrive_exactly(fake_usb: FakeUsbPrinterBackend) -> None:
    link = UsbLink(EPSON, backend=fake_usb)
    # WHEN a badge is written
    link.write(PAYLOAD)
    # THEN the OUT endpoint got exactly those bytes
    assert fake_usb.written_bytes() == PAYLOAD
    link.close()


@pytest.mark.parametrize(
    ("replies", "reachable", "jammed", "cover_open", "paper"),
    [
        ({}, True, False, False, PaperLevel.OK),
        ({4: 0x1E}, True, False, False, PaperLevel.LOW),
        ({1: 0x1A, 2: 0x32, 4: 0x7E}, True, False, False, PaperLevel.OUT),
        ({1: 0x1A, 2: 0x52, 3: 0x1A}, True, True, False, PaperLevel.OK),
        ({1: 0x1A, 2: 0x16}, True, False, True, PaperLevel.OK),
    ],
)
def test_probe_reads_status_over_the_in_endpoint(
    fake_usb: FakeUsbPrinterBackend,
    replies: dict[int, int],
    reachable: bool,
    jammed: bool,
    cover_open: bool,
    paper: PaperLevel,
) -> None:
    # GIVEN a USB printer in some condition
    fake_usb.status.update(replies)
    link = UsbLink(EPSON, backend=fake_usb)
    # WHEN probed
    report = probe_health(link)
    # THEN the report reflects it, from four DLE EOT queries on the OUT endpoint
    assert (report.reachable, report.jammed, report.cover_open, report.paper) == (
        reachable,
        jammed,
        cover_open,
        paper,
    )
    assert fake_usb.responder.queries == [1, 2, 3, 4]
    link.close()


def test_a_stale_reply_is_drained_before_a_query(fake_usb: FakeUsbPrinterBackend) -> None:
    # GIVEN raster data that happened to contain DLE EOT 4, leaving an unread reply
    fake_usb.status[4] = 0x1E  # read as n=1 this byte would mean "offline"
    link = UsbLink(EPSON, backend=fake_usb)
    link.write(b"\x1dv0\x00\x10\x04\x04\x00")
    # WHEN probed
    report = probe_health(link)
    # THEN each query got its own reply: not offline, paper low
    assert report.reachable and report.detail == "paper near end"
    link.close()


def test_a_silent_printer_is_unreachable(fake_usb: FakeUsbPrinterBackend) -> None:
    # GIVEN a printer that enumerates but never answers (hung firmware)
    fake_usb.answering = False
    # WHEN probed
    report = probe_health(UsbLink(EPSON, backend=fake_usb))
    # THEN unreachable, with the reason
    assert report.reachable is False
    assert report.detail is not None and report.detail.startswith("no reply to DLE EOT 1")


def test_a_missing_printer_gives_a_clear_error() -> None:
    # GIVEN a bus where only some other device is plugged in
    other = FakeUsbPrinterBackend(vendor_id=0x0519, product_id=0x0001)
    link = UsbLink(EPSON, backend=other)
    # WHEN opened, THEN the error names the id and what to check
    with pytest.raises(PrinterNotFoundError, match=r"04b8:0202 not found: is it plugged in"):
        link.open()
    # AND a probe reports it unreachable with the same reason, without raising
    report = probe_health(link)
    assert report.reachable is False
    assert report.detail is not None and "04b8:0202 not found" in report.detail


@pytest.mark.parametrize(
    ("refusal", "advice"),
    [(errno.EACCES, "udev rule"), (errno.EBUSY, "usblp")],
)
def test_access_problems_say_what_to_do(
    fake_usb: FakeUsbPrinterBackend, refusal: int, advice: str
) -> None:
    # GIVEN a printer whose interface cannot be claimed (no udev rule / usblp holds it)
    fake_usb.claim_error = refusal
    link = UsbLink(EPSON, backend=fake_usb)
    # WHEN written to, THEN the error says how to fix it
    with pytest.raises(PrinterAccessError, match=advice):
        link.write(b"\x1b@")
    assert not link.is_open


def test_unplug_and_replug(fake_usb: FakeUsbPrinterBackend) -> None:
    # GIVEN a link in use
    link = UsbLink(EPSON, backend=fake_usb)
    link.write(b"one")
    # WHEN the cable is pulled, THEN writing fails and a probe says unreachable
    fake_usb.unplug()
    with pytest.raises(PrinterNotFoundError, match="disconnected"):
        link.write(b"lost")
    assert probe_health(link).reachable is False
    # WHEN it is plugged back in, THEN the link finds it again by itself
    fake_usb.replug()
    link.write(b"two")
    assert probe_health(link).reachable is True
    assert fake_usb.written_bytes().startswith(b"onetwo")
    link.close()


def test_endpoints_are_found_from_the_descriptors() -> None:
    # GIVEN a clone printer with OUT 0x02 and IN 0x81, and a config naming neither
    clone = FakeUsbPrinterBackend(0x0416, 0x5011, out_endpoint=0x02, in_endpoint=0x81)
    link = UsbLink(UsbConnection(vendor_id=0x0416, product_id=0x5011), backend=clone)
    # WHEN used (the fake refuses transfers on any other endpoint)
    link.write(b"hello")
    report = probe_health(link)
    # THEN bytes and status went through the right endpoints
    assert clone.written_bytes().startswith(b"hello")
    assert report.reachable is True
    link.close()


def test_a_configured_endpoint_the_device_lacks_is_refused(
    fake_usb: FakeUsbPrinterBackend,
) -> None:
    # GIVEN a config naming an OUT endpoint this printer does not have
    connection = EPSON.model_copy(update={"out_endpoint": 0x03})
    link = UsbLink(connection, backend=fake_usb)
    # WHEN opened, THEN the error lists what the device does have
    with pytest.raises(PrinterLinkError, match=r"bulk OUT 0x01 and IN 0x82"):
        link.open()
