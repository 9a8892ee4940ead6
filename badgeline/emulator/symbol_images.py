"""The dots of a QR code or a barcode as the printer burns them.

A QR code is drawn with the `qrcode` library from the data stored by
`GS ( k` <Function 180>, each module a square of <Function 167> dots, at the
<Function 169> error correction level, with no quiet zone of its own (the
space around it is the paper's). A barcode is its bars `GS h` dots high,
with its human readable interpretation (`GS H`, in the `GS f` font)
centred above, below or both.
"""

from __future__ import annotations

import logging

from PIL import Image, ImageDraw

from badgeline.emulator.glyphs import CELLS, text_image
from badgeline.emulator.page import Barcode, QrCode

logger = logging.getLogger(__name__)

# Between the bars and the HRI characters.
HRI_GAP_DOTS = 4


def qr_image(code: QrCode) -> Image.Image | None:
    """The symbol, mode "1"; None when it cannot be drawn (no qrcode, too much data)."""
    try:
        import qrcode
        from qrcode.exceptions import DataOverflowError
    except ImportError:
        logger.warning("qrcode is not installed: QR codes are not drawn")
        return None
    levels = {
        "L": qrcode.constants.ERROR_CORRECT_L,
        "M": qrcode.constants.ERROR_CORRECT_M,
        "Q": qrcode.constants.ERROR_CORRECT_Q,
        "H": qrcode.constants.ERROR_CORRECT_H,
    }
    symbol = qrcode.QRCode(error_correction=levels[code.error_correction], border=0)
    symbol.add_data(code.data)
    try:
        symbol.make(fit=True)
    except (DataOverflowError, ValueError):  # qrcode raises either, by how much is too much
        # More data than a QR code holds at this level: the printer prints nothing.
        logger.info("QR code of %d bytes does not fit level %s", len(code.data),
                    code.error_correction)  # fmt: skip
        return None
    matrix = symbol.get_matrix()
    modules = Image.new("1", (len(matrix), len(matrix)), 1)
    modules.putdata([0 if dark else 1 for row in matrix for dark in row])
    side = len(matrix) * code.module_dots
    return modules.resize((side, side), Image.Resampling.NEAREST)


def barcode_image(barcode: Barcode, max_width: int) -> Image.Image:
    """The bars and their HRI, mode "1", cut at `max_width` dots."""
    width = min(max_width, barcode.width)
    hri = text_image(barcode.hri, barcode.hri_font, max_width=width) if barcode.hri else None
    hri_height = CELLS[barcode.hri_font].height + HRI_GAP_DOTS
    above = hri_height if hri is not None and barcode.hri_above else 0
    below = hri_height if hri is not None and barcode.hri_below else 0
    image = Image.new("1", (max(1, width), above + barcode.height + below), 1)
    draw = ImageDraw.Draw(image)
    left = 0
    for index, bar in enumerate(barcode.bars):
        if left >= width:
            break
        if index % 2 == 0:
            draw.rectangle((left, above, left + bar - 1, above + barcode.height - 1), fill=0)
        left += bar
    if hri is not None:
        hri_left = max(0, (width - hri.width) // 2)
        if barcode.hri_above:
            image.paste(hri, (hri_left, 0))
        if barcode.hri_below:
            image.paste(hri, (hri_left, above + barcode.height + HRI_GAP_DOTS))
    return image
