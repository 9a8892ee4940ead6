"""Reading the emulator's pictures back: an independent decoder for codes, ink for the rest."""

from __future__ import annotations

from dataclasses import dataclass

import zxingcpp
from PIL import Image

# Paper beyond the printable area: the quiet zone a scanner needs at the edges.
PAPER_EDGE = 32


@dataclass(frozen=True)
class Scanned:
    format: str
    text: str
    ec_level: str
    left: int
    top: int
    right: int
    bottom: int


def scan(picture: Image.Image) -> list[Scanned]:
    """Every code zxing-cpp finds in `picture`, top to bottom, in the picture's coordinates."""
    paper = Image.new("L", (picture.width + 2 * PAPER_EDGE, picture.height + 2 * PAPER_EDGE), 255)
    paper.paste(picture.convert("L"), (PAPER_EDGE, PAPER_EDGE))
    found = []
    for result in zxingcpp.read_barcodes(paper):
        corners = [result.position.top_left, result.position.top_right,
                   result.position.bottom_left, result.position.bottom_right]  # fmt: skip
        xs = [corner.x - PAPER_EDGE for corner in corners]
        ys = [corner.y - PAPER_EDGE for corner in corners]
        found.append(Scanned(str(result.format), result.text, result.ec_level,
                             min(xs), min(ys), max(xs), max(ys)))  # fmt: skip
    return sorted(found, key=lambda code: code.top)


def inked_rows(picture: Image.Image, left: int = 0, right: int | None = None) -> list[int]:
    """The rows with at least one black dot between columns `left` and `right`."""
    gray = picture.convert("L").crop((left, 0, right or picture.width, picture.height))
    rows = (gray.crop((0, y, gray.width, y + 1)) for y in range(gray.height))
    return [y for y, row in enumerate(rows) if row.getextrema()[0] == 0]


def solid_rows(picture: Image.Image, run: int) -> list[int]:
    """The rows holding `run` black dots in a row: only a solid image has such long runs."""
    gray = picture.convert("L")
    rows = []
    for y in range(gray.height):
        row = gray.crop((0, y, gray.width, y + 1)).tobytes()
        if b"\x00" * run in row:
            rows.append(y)
    return rows
