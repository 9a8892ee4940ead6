"""The printer's character fonts, drawn with DejaVu Sans Mono.

Epson printers print font A in 12 x 24 dot cells and font B in 9 x 17
(ESC/POS Command Reference, ESC M Select character font); every character
here is drawn into such a cell, so a line of n characters is 12n dots
wide, as on paper. The face is DejaVu Sans Mono from python-barcode's
package data (what the sample badges embed, samples.py): it has a glyph for
every character of the code pages ESC t selects (accents, box drawing,
Greek, symbols). Without python-barcode the text falls back to Pillow's
built-in font, which draws the characters it lacks as boxes; a warning says so.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from functools import lru_cache

from PIL import Image, ImageDraw, ImageFont

from badgeline.emulator.page import HriFont

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Cell:
    width: int
    height: int
    # The DejaVu size whose advance and line height fill the cell (advance 0.602 em).
    face_size: int


CELLS = {HriFont.A: Cell(12, 24, 20), HriFont.B: Cell(9, 17, 15)}

_Font = ImageFont.FreeTypeFont | ImageFont.ImageFont
# Pages render in worker threads, one per emulator, and a FreeType face must
# not be used by two threads at once.
_FONT_LOCK = threading.Lock()


def text_image(
    text: str, font: HriFont = HriFont.A, *, bold: bool = False, max_width: int | None = None
) -> Image.Image:
    """`text` in 1-bit cells of `font`, one cell per character, cut at `max_width` dots."""
    cell = CELLS[font]
    if max_width is not None:
        text = text[: max(0, max_width // cell.width)]
    image = Image.new("1", (max(1, len(text) * cell.width + int(bold)), cell.height), 1)
    if not text.strip():
        return image
    draw = ImageDraw.Draw(image)
    with _FONT_LOCK:
        face = _face(cell.face_size)
        for index, character in enumerate(text):
            if character.isspace():
                continue
            left = index * cell.width
            draw.text((left, 0), character, font=face, fill=0)
            if bold:  # emphasised: each dot again one to the right
                draw.text((left + 1, 0), character, font=face, fill=0)
    return image


@lru_cache(maxsize=4)
def _face(size: int) -> _Font:
    try:
        from badgeline.samples import badge_font_path

        return ImageFont.truetype(str(badge_font_path()), size)
    except (ImportError, OSError) as error:
        logger.warning(
            "DejaVu Sans Mono (python-barcode) not available (%s): text is drawn in Pillow's"
            " default font, which draws characters it lacks as boxes",
            error,
        )
        return ImageFont.load_default(size)
