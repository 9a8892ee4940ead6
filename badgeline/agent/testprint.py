"""A local test badge, printed straight to the printer: the tech's "does this printer work?".

It never goes through the coordinator (no job, no lease, no journal entry):
it must work before the Pi has found the coordinator, which is exactly when a
tech needs it. It takes the printer lock the print loop holds from a badge's
first byte to its confirmation probe, so it waits for a badge in progress
instead of landing in the middle of it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

from badgeline import __version__
from badgeline.agent.loops.probe import PrinterWatch, can_print
from badgeline.agent.printers import AsyncPrinterLink, PrinterLinkError
from badgeline.agent.printers.family import EscposFamily, LabelLengthUnknown, PrinterFamily
from badgeline.log import log_event
from badgeline.protocol.agent_models import PrinterHealthReport

if TYPE_CHECKING:
    from PIL import Image

TEST_FOOTER_PREFIX = "test print"
_MARGIN = 16
# How long a label printer's test badge is waited for (it is out in seconds).
LABEL_WAIT_S = 30.0
_LINE_GAP = 10


class LocalPrintRefused(Exception):
    """The test badge was not printed; `status` is the HTTP status that says why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class DiagnosticPrinter:
    """Prints the test badge under the print loop's printer lock."""

    def __init__(
        self,
        *,
        link: AsyncPrinterLink,
        watch: PrinterWatch,
        printer_lock: asyncio.Lock,
        printer_id: str,
        width_dots: int,
        family: PrinterFamily | None = None,
    ) -> None:
        self.family = family or EscposFamily()
        self.link = link
        self.watch = watch
        self.printer_lock = printer_lock
        self.printer_id = printer_id
        self.width_dots = width_dots

    async def print_test_badge(self) -> PrinterHealthReport:
        """Print it and return the printer's status right after; LocalPrintRefused otherwise."""
        if not can_print(self.watch.latest):
            # Bytes sent to a printer with its cover open come out when it is
            # closed, long after the tech has given up: say why instead.
            detail = self.watch.latest.detail or "not ready"
            raise LocalPrintRefused(409, f"the printer cannot print now: {detail}")
        try:
            escpos = await asyncio.to_thread(self._badge)
        except LabelLengthUnknown as unknown:
            raise LocalPrintRefused(409, str(unknown)) from None
        try:
            async with self.printer_lock:
                if isinstance(self.family, EscposFamily):
                    await self.link.write(escpos)
                else:
                    await self._print_label(escpos)
                report = await self.link.probe()
        except PrinterLinkError as error:
            self.watch.request_probe()
            log_event("test_print_failed", logging.WARNING, printer_id=self.printer_id,
                      error=str(error))  # fmt: skip
            raise LocalPrintRefused(502, f"printer write failed: {error}") from None
        self.watch.update(report)
        log_event("test_print", printer_id=self.printer_id, bytes=len(escpos),
                  printer_ready=can_print(report))  # fmt: skip
        return report

    def _badge(self) -> bytes:
        if isinstance(self.family, EscposFamily):
            return diagnostic_badge_escpos(self.printer_id, self.width_dots)
        return diagnostic_label(self.printer_id, self.family)

    async def _print_label(self, data: bytes) -> None:
        """A label printer's test badge, waited for until it is out (or a while): its
        completion must not be read as that of the badge the print loop sends next."""
        mark = await self.link.send_marked(data)
        deadline = asyncio.get_running_loop().time() + LABEL_WAIT_S
        while asyncio.get_running_loop().time() < deadline:
            if await self.link.poll_printed(mark, 0.2) is not None:
                return


def footer_text(printer_id: str) -> str:
    """The footer line of the test badge (an emulator, or a person, reads it back)."""
    return f"{TEST_FOOTER_PREFIX} {printer_id}"


def diagnostic_badge_escpos(printer_id: str, width_dots: int) -> bytes:
    """ESC/POS for the test badge: a framed card with the printer id, version and time."""
    from badgeline.badge.raster import encode_escpos

    return encode_escpos(_draw(printer_id, width_dots), footer_text(printer_id))


def diagnostic_label(printer_id: str, family: PrinterFamily) -> bytes:
    """The test badge on a label printer's label, in its language."""
    from PIL import Image

    from badgeline.badge.raster import draw_footer

    layout = family.layout(True)
    assert layout is not None
    card = _draw(printer_id, layout.width_dots)
    length = layout.length_dots or card.height + layout.footer_dots
    label = Image.new("1", (layout.width_dots, length), 1)
    label.paste(card.crop((0, 0, card.width, min(card.height, length - layout.footer_dots))))
    footer = footer_text(printer_id)
    if layout.draw_footer:
        draw_footer(label, footer, length - layout.footer_dots, layout.footer_dots)
    return family.encode(label.tobytes(), label.size, footer)


def _draw(printer_id: str, width_dots: int) -> Image.Image:
    from PIL import Image, ImageDraw

    lines = [
        ("badgeline", 2),
        ("TEST PRINT", 2),
        (printer_id, 1),
        (f"agent {__version__}", 1),
        (time.strftime("%Y-%m-%d %H:%M:%S"), 1),
    ]
    base = max(12, width_dots // 24)
    fonts = {scale: _font(base * scale) for scale in (1, 2)}
    heights = [_MARGIN * 2] + [fonts[scale].getbbox(text)[3] + _LINE_GAP for text, scale in lines]
    image = Image.new("1", (width_dots, sum(heights) + _MARGIN), 1)
    draw = ImageDraw.Draw(image)
    draw.rectangle((2, 2, width_dots - 3, image.height - 3), outline=0, width=3)
    top = _MARGIN * 2
    for text, scale in lines:
        font = fonts[scale]
        left, _, right, bottom = font.getbbox(text)
        draw.text(((width_dots - (right - left)) // 2, top), text, font=font, fill=0)
        top += bottom + _LINE_GAP
    return image


def _font(size: int) -> Any:
    from PIL import ImageFont

    # Pillow >= 10.1 scales its built-in font; older ones have one small bitmap size.
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # pragma: no cover - Pillow 10.0
        return ImageFont.load_default()
