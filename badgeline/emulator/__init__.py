"""A TCP ESC/POS printer for tests and the demo: the ground truth of what was printed."""

from badgeline.emulator.decoder import EscPosDecoder, PageCut, ProcessIdRequest, StatusRequest
from badgeline.emulator.page import (
    Align,
    Barcode,
    Feed,
    HriFont,
    Page,
    QrCode,
    RasterBlock,
    TextLine,
    TextStyle,
)
from badgeline.emulator.printhead import PrintedBadge, job_ids_in
from badgeline.emulator.render import render_page
from badgeline.emulator.server import PrinterEmulator
from badgeline.emulator.state import Fault, PrinterCondition, status_reply

__all__ = [
    "Align",
    "Barcode",
    "EscPosDecoder",
    "Fault",
    "Feed",
    "HriFont",
    "Page",
    "PageCut",
    "PrintedBadge",
    "PrinterCondition",
    "PrinterEmulator",
    "ProcessIdRequest",
    "QrCode",
    "RasterBlock",
    "StatusRequest",
    "TextLine",
    "TextStyle",
    "job_ids_in",
    "render_page",
    "status_reply",
]
