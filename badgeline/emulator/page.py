"""What one stretch of paper between two cuts carries, in the order it came out.

A page is a list of elements: text lines, raster images, QR codes, barcodes
and paper feeds, top to bottom as the printer printed them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import IntEnum

from PIL import Image

# Bounds that keep a hostile or corrupt stream from exhausting memory. The
# widest ESC/POS printers print 832 dots (112 mm paper); 2048 leaves room.
MAX_RASTER_WIDTH_DOTS = 2048
# About 2 m of paper at 8 dots/mm: no badge is that long.
MAX_PAGE_RASTER_ROWS = 16384
MAX_PAGE_LINES = 2000
MAX_LINE_CHARS = 1024
# QR codes and barcodes on one page, and feeds: each costs little, but not nothing.
MAX_PAGE_SYMBOLS = 64
MAX_PAGE_FEEDS = 2000


class Align(IntEnum):
    LEFT = 0
    CENTER = 1
    RIGHT = 2


@dataclass(frozen=True)
class TextStyle:
    align: Align = Align.LEFT
    bold: bool = False
    width_scale: int = 1
    height_scale: int = 1


@dataclass(frozen=True)
class TextLine:
    text: str
    style: TextStyle = TextStyle()

    @property
    def is_blank(self) -> bool:
        return not self.text.strip()


@dataclass(frozen=True)
class RasterBlock:
    """One `GS v 0` image exactly as sent: mode "1", black where the printer burns a dot."""

    image: Image.Image
    align: Align = Align.LEFT
    # GS v 0 m: 1 doubles the dot width, 2 the height, 3 both.
    dot_scale: tuple[int, int] = (1, 1)


@dataclass(frozen=True)
class QrCode:
    """A `GS ( k` QR code symbol: the stored data, drawn at print time."""

    data: bytes
    module_dots: int  # <Function 167>: each module is a square this many dots wide
    error_correction: str  # <Function 169>: "L", "M", "Q" or "H"
    align: Align = Align.LEFT


class HriFont(IntEnum):
    """`GS f n`: the font of the human readable interpretation under or over a barcode."""

    A = 0  # 12 x 24 dots
    B = 1  # 9 x 17 dots


@dataclass(frozen=True)
class Barcode:
    """A `GS k` barcode, already encoded: bar and space widths in dots, bar first."""

    bars: tuple[int, ...]
    height: int  # GS h
    hri: str  # the characters printed as human readable interpretation
    hri_above: bool = False  # GS H
    hri_below: bool = False
    hri_font: HriFont = HriFont.A  # GS f
    align: Align = Align.LEFT

    @property
    def width(self) -> int:
        return sum(self.bars)


@dataclass(frozen=True)
class Feed:
    """`ESC J n`: paper fed by `dots` with nothing printed."""

    dots: int


Element = TextLine | RasterBlock | QrCode | Barcode | Feed


@dataclass
class Page:
    elements: list[Element] = field(default_factory=list)
    # Set when a limit above dropped part of what arrived for this page.
    truncated: bool = False

    @property
    def rasters(self) -> list[RasterBlock]:
        return [element for element in self.elements if isinstance(element, RasterBlock)]

    @property
    def lines(self) -> list[TextLine]:
        return [element for element in self.elements if isinstance(element, TextLine)]

    @property
    def raster_rows(self) -> int:
        return sum(block.image.height for block in self.rasters)

    @property
    def has_content(self) -> bool:
        return any(_is_content(element) for element in self.elements)

    @property
    def text(self) -> list[str]:
        return [line.text for line in self.lines]

    def raster(self) -> Image.Image | None:
        """All raster blocks stacked top to bottom, left-aligned, as one 1-bit image.

        Drivers send a tall badge in bands of one image each, so the stack is
        the image the driver started from.
        """
        rasters = self.rasters
        if not rasters:
            return None
        width = max(block.image.width for block in rasters)
        stacked = Image.new("1", (width, self.raster_rows), 1)
        top = 0
        for block in rasters:
            stacked.paste(block.image, (0, top))
            top += block.image.height
        return stacked


def _is_content(element: Element) -> bool:
    if isinstance(element, TextLine):
        return not element.is_blank
    return not isinstance(element, Feed)


TAB_WIDTH = 8


class PageBuilder:
    """Collects what the decoder reads into the page the next cut will end.

    Text waits in a line buffer until a line feed prints it, as on a real
    printer; the style of a line is the one in force at its first character
    because Epson printers apply alignment only at the start of a line.
    Images and symbols go onto the page when their command arrives, aligned
    by the ESC a in force then; one that arrives mid-line prints the line
    buffer first, since an image or a symbol starts at the beginning of a
    line (some printers ignore such a command instead: neither the agent
    nor python-escpos sends one mid-line).
    """

    def __init__(self) -> None:
        self.style = TextStyle()
        self._page = Page()
        self._line: list[str] = []
        self._line_length = 0
        self._line_style: TextStyle | None = None
        # What the page holds so far, against the bounds above.
        self._raster_rows = self._lines = self._feeds = self._symbols = 0

    @property
    def has_pending_content(self) -> bool:
        """Content has arrived that no cut has ended yet."""
        return self._page.has_content or "".join(self._line).strip() != ""

    @property
    def line_pending(self) -> bool:
        """The line buffer holds data (the print buffer is not empty)."""
        return bool(self._line)

    def reset_line_and_style(self) -> None:
        """ESC @: the line buffer is cleared; what was printed stays on the paper."""
        self.style = TextStyle()
        self._clear_line()

    def mark_truncated(self) -> None:
        self._page.truncated = True

    def append_text(self, text: str) -> None:
        if self._line_style is None:
            self._line_style = self.style
        room = MAX_LINE_CHARS - self._line_length
        if len(text) > room:
            self._page.truncated = True
            text = text[:room]
        self._line.append(text)
        self._line_length += len(text)

    def tab(self) -> None:
        self.append_text(" " * (TAB_WIDTH - self._line_length % TAB_WIDTH))

    def end_line(self, keep_blank: bool = True) -> bool:
        """Print the line buffer; True when a line went onto the page."""
        text = "".join(self._line)
        style = self._line_style or self.style
        self._clear_line()
        if not text and not keep_blank:
            return False
        if self._lines >= MAX_PAGE_LINES:
            self._page.truncated = True
            return False
        self._lines += 1
        self._page.elements.append(TextLine(text, style))
        return True

    def feed_lines(self, count: int) -> None:
        """ESC d n: print the buffer, then feed until n lines have passed."""
        printed = self.end_line(keep_blank=False)
        for _ in range(count - int(printed)):
            if not self.end_line():
                break

    def feed_dots(self, dots: int) -> None:
        """ESC J n: print the buffer, then feed n dots."""
        self.end_line(keep_blank=False)
        if dots == 0:
            return
        if self._feeds >= MAX_PAGE_FEEDS:
            self._page.truncated = True
            return
        self._feeds += 1
        self._page.elements.append(Feed(dots))

    def add_raster(self, image: Image.Image, dot_scale: tuple[int, int]) -> None:
        self.end_line(keep_blank=False)
        if self._raster_rows + image.height > MAX_PAGE_RASTER_ROWS:
            self._page.truncated = True
            return
        self._raster_rows += image.height
        self._page.elements.append(RasterBlock(image, self.style.align, dot_scale))

    def add_symbol(self, symbol: QrCode | Barcode) -> None:
        """A QR code or barcode: `align` is replaced by the alignment in force."""
        self.end_line(keep_blank=False)
        if self._symbols >= MAX_PAGE_SYMBOLS:
            self._page.truncated = True
            return
        self._symbols += 1
        self._page.elements.append(replace(symbol, align=self.style.align))

    def cut(self) -> Page | None:
        """End the page; None when nothing but blank feeds was on it."""
        self.end_line(keep_blank=False)
        page, self._page = self._page, Page()
        self._raster_rows = self._lines = self._feeds = self._symbols = 0
        return page if page.has_content else None

    def _clear_line(self) -> None:
        self._line, self._line_length, self._line_style = [], 0, None
