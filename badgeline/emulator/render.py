"""Turn a printed page into the picture a person would see on the paper."""

from __future__ import annotations

import math
import threading
from functools import lru_cache

from PIL import Image, ImageDraw, ImageFont

from badgeline.emulator.page import Align, Page, RasterBlock, TextLine

# 80 mm paper at 203 dpi: the common badge and receipt width.
PAPER_WIDTH_DOTS = 576
# Epson font A is 12x24 dots with a default line spacing of 1/6 inch (34 dots).
FONT_SIZE = 24
LINE_HEIGHT = 34
MARGIN_DOTS = 16
# Pages are bounded by the decoder; this bounds the picture of 8x-scaled text too.
MAX_RENDER_HEIGHT = 32768

_Font = ImageFont.FreeTypeFont | ImageFont.ImageFont
# Pages render in worker threads, one per emulator, and a FreeType face must
# not be used by two threads at once.
_FONT_LOCK = threading.Lock()


@lru_cache(maxsize=1)
def _font() -> _Font:
    return ImageFont.load_default(FONT_SIZE)


def render_page(page: Page) -> Image.Image:
    """A 1-bit picture: raster blocks on top, text lines below, each aligned as sent."""
    width = max([PAPER_WIDTH_DOTS, *(_scaled_width(block) for block in page.rasters)])
    pieces = [(_scale_raster(block), block.align) for block in page.rasters]
    with _FONT_LOCK:
        lines = [(_render_line(line, width), line.style.align) for line in _trim_trailing(page)]
    pieces += lines
    height = min(MAX_RENDER_HEIGHT, 2 * MARGIN_DOTS + sum(image.height for image, _ in pieces))
    canvas = Image.new("1", (width, height), 1)
    top = MARGIN_DOTS
    for image, align in pieces:
        if top >= height:
            break
        canvas.paste(image, (_left_edge(align, width, image.width), top))
        top += image.height
    return canvas


def _scaled_width(block: RasterBlock) -> int:
    return block.image.width * block.dot_scale[0]


def _scale_raster(block: RasterBlock) -> Image.Image:
    if block.dot_scale == (1, 1):
        return block.image
    x_scale, y_scale = block.dot_scale
    size = (block.image.width * x_scale, block.image.height * y_scale)
    return block.image.resize(size, Image.Resampling.NEAREST)


def _trim_trailing(page: Page) -> list[TextLine]:
    # Drivers feed blank lines before a cut so the text clears the cutter.
    lines = list(page.lines)
    while lines and lines[-1].is_blank:
        lines.pop()
    return lines


def _render_line(line: TextLine, page_width: int) -> Image.Image:
    style = line.style
    # Render only what fits on the paper before scaling: 8x text would be huge.
    fitting_width = math.ceil(page_width / style.width_scale)
    font = _font()
    text_width = min(fitting_width, math.ceil(font.getlength(line.text)) + 1)
    image = Image.new("1", (max(1, text_width), LINE_HEIGHT), 1)
    if line.text:
        draw = ImageDraw.Draw(image)
        draw.text((0, 0), line.text, font=font, fill=0)
        if style.bold:
            draw.text((1, 0), line.text, font=font, fill=0)
    if (style.width_scale, style.height_scale) == (1, 1):
        return image
    size = (image.width * style.width_scale, image.height * style.height_scale)
    return image.resize(size, Image.Resampling.NEAREST)


def _left_edge(align: Align, page_width: int, width: int) -> int:
    if align is Align.CENTER:
        return max(0, (page_width - width) // 2)
    if align is Align.RIGHT:
        return max(0, page_width - width)
    return 0
