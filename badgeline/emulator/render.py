"""Turn a printed page into the picture a person would see on the paper.

The page's elements come out top to bottom in the order they arrived, each
aligned as it was sent (ESC a Select justification): text lines, raster
images, QR codes, barcodes, and the paper fed between them.
"""

from __future__ import annotations

import math

from PIL import Image

from badgeline.emulator.glyphs import text_image
from badgeline.emulator.page import (
    Align,
    Barcode,
    Element,
    Feed,
    Page,
    QrCode,
    RasterBlock,
    TextLine,
)
from badgeline.emulator.symbol_images import barcode_image, qr_image

# 80 mm paper at 203 dpi: the common badge and receipt width.
PAPER_WIDTH_DOTS = 576
# Font A is 12x24 dots (glyphs.py), the default line spacing 1/6 inch (34 dots).
LINE_HEIGHT = 34
MARGIN_DOTS = 16
# Pages are bounded by the decoder; this bounds the picture of 8x-scaled text too.
MAX_RENDER_HEIGHT = 32768

# What one element puts on the paper: an image and its alignment, or blank dots.
_Piece = tuple[Image.Image, Align] | int


def render_page(page: Page, paper_width_dots: int = PAPER_WIDTH_DOTS) -> Image.Image:
    """A 1-bit picture of the page: its elements top to bottom, each aligned as sent."""
    width = max([paper_width_dots, *(_scaled_width(block) for block in page.rasters)])
    pieces: list[_Piece] = []
    used = 2 * MARGIN_DOTS
    for element in _trim_trailing(page.elements):
        if used >= MAX_RENDER_HEIGHT:
            break
        piece = _draw(element, width)
        if piece is not None:
            pieces.append(piece)
            used += piece if isinstance(piece, int) else piece[0].height
    canvas = Image.new("1", (width, min(MAX_RENDER_HEIGHT, used)), 1)
    top = MARGIN_DOTS
    for piece in pieces:
        if top >= canvas.height:
            break
        if isinstance(piece, int):
            top += piece
            continue
        image, align = piece
        canvas.paste(image, (_left_edge(align, width, image.width), top))
        top += image.height
    return canvas


def _draw(element: Element, width: int) -> _Piece | None:
    if isinstance(element, TextLine):
        return _render_line(element, width), element.style.align
    if isinstance(element, RasterBlock):
        return _scale_raster(element), element.align
    if isinstance(element, QrCode):
        image = qr_image(element)
        return None if image is None else (image, element.align)
    if isinstance(element, Barcode):
        return barcode_image(element, width), element.align
    return element.dots


def _scaled_width(block: RasterBlock) -> int:
    return block.image.width * block.dot_scale[0]


def _scale_raster(block: RasterBlock) -> Image.Image:
    if block.dot_scale == (1, 1):
        return block.image
    x_scale, y_scale = block.dot_scale
    size = (block.image.width * x_scale, block.image.height * y_scale)
    return block.image.resize(size, Image.Resampling.NEAREST)


def _trim_trailing(page_elements: list[Element]) -> list[Element]:
    # Drivers feed blank lines before a cut so the text clears the cutter.
    elements = list(page_elements)
    while elements and _is_blank(elements[-1]):
        elements.pop()
    return elements


def _is_blank(element: Element) -> bool:
    return isinstance(element, Feed) or (isinstance(element, TextLine) and element.is_blank)


def _render_line(line: TextLine, page_width: int) -> Image.Image:
    style = line.style
    # Render only what fits on the paper before scaling: 8x text would be huge.
    fitting_width = math.ceil(page_width / style.width_scale)
    glyphs = text_image(line.text, bold=style.bold, max_width=fitting_width)
    image = Image.new("1", (glyphs.width, LINE_HEIGHT), 1)
    image.paste(glyphs, (0, 0))
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
