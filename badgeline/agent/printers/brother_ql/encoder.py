"""One badge as a Brother QL raster job: the label's picture one raster line at a time.

Raster Command Reference (QL-800/810W/820NWB, QL-1100/1110NWB), 4. Printing
Command Details, in the order the job sends them:

    NUL x 400 / 200   Invalidate: ends whatever a broken job left half sent
                      (400 on the QL-800 series, 200 on the QL-1100 series)
    ESC @             Initialize
    ESC i a 01h       Switch dynamic command mode: raster
    ESC i ! 00h       Switch automatic status notification mode: notify (the
                      "printing completed" status the confirmation waits for)
    ESC i z n1..n10   Print information: n1 the valid fields (80h recover, 02h
                      media type, 04h width, 08h length), n2 media type (0Ah
                      continuous, 0Bh die-cut), n3 width mm, n4 length mm,
                      n5..n8 raster lines (little endian), n9 00h first page
    ESC i M n         Various mode: 40h auto cut
    ESC i A 01h       Cut each 1 label
    ESC i K n         Expanded mode: 08h cut at end
    ESC i d n1 n2     Margin (feed) in dots: 35 on continuous tape, 0 die-cut
    g 00h n d1..dn    Raster graphics transfer, one line of n bytes (uncompressed:
                      the QL-800 takes no compression)
    Control-Z (1Ah)   Print command with feeding: the last page

A raster line drives the pins from the far end of the head (2.3.5 Raster
line), so each row of the label is mirrored into it, after the roll's margin
pins. Pure Python on packed bits: the agent encodes without Pillow.
"""

from __future__ import annotations

import struct

from badgeline.agent.printers.brother_ql.media import CONTINUOUS_FEED_DOTS, WIDE, QlMedia
from badgeline.badge.bits import black_rows

ESC = b"\x1b"
INITIALIZE = ESC + b"@"
RASTER_MODE = ESC + b"ia\x01"
NOTIFY = ESC + b"i!\x00"
VALID_RECOVER, VALID_TYPE, VALID_WIDTH, VALID_LENGTH = 0x80, 0x02, 0x04, 0x08
CONTINUOUS, DIE_CUT = 0x0A, 0x0B
AUTO_CUT = 0x40
CUT_AT_END = 0x08
PRINT_LAST_PAGE = b"\x1a"


def invalidate(media: QlMedia) -> bytes:
    return b"\x00" * (200 if media.model in WIDE else 400)


def print_information(media: QlMedia, lines: int) -> bytes:
    roll = media.roll
    valid = VALID_RECOVER | VALID_TYPE | VALID_WIDTH | (VALID_LENGTH if roll.die_cut else 0)
    kind = DIE_CUT if roll.die_cut else CONTINUOUS
    return ESC + b"iz" + struct.pack("<BBBBIBB", valid, kind, roll.width_mm, roll.length_mm,
                                     lines, 0, 0)  # fmt: skip


def raster_lines(packed_white_is_one: bytes, size: tuple[int, int], media: QlMedia) -> bytes:
    """`g 00h n` + the line, for each row: mirrored, after the roll's margin pins."""
    width, height = size
    if width != media.roll.width_dots:
        raise ValueError(f"the picture is {width} dots wide, {media.roll.name} prints"
                         f" {media.roll.width_dots}")  # fmt: skip
    row_bytes, dots = black_rows(packed_white_is_one, width)
    line_bytes = media.pins // 8
    header = b"g\x00" + bytes([line_bytes])
    shift = media.pins - media.margin_pins - width
    spare = row_bytes * 8 - width
    out = bytearray()
    for top in range(0, height * row_bytes, row_bytes):
        row = int.from_bytes(dots[top : top + row_bytes], "big") >> spare
        mirrored = int(format(row, f"0{width}b")[::-1], 2)
        out += header + (mirrored << shift).to_bytes(line_bytes, "big")
    return bytes(out)


def raster_job(
    packed_white_is_one: bytes, size: tuple[int, int], media: QlMedia, *, cut: bool = True
) -> bytes:
    """The whole job for one label (one page)."""
    _, height = size
    if media.roll.die_cut and height != media.roll.length_dots:
        raise ValueError(f"a {media.roll.name} label is {media.roll.length_dots} dots long,"
                         f" the picture {height}")  # fmt: skip
    feed = 0 if media.roll.die_cut else CONTINUOUS_FEED_DOTS
    return b"".join([
        invalidate(media), INITIALIZE, RASTER_MODE, NOTIFY, print_information(media, height),
        ESC + b"iM" + bytes([AUTO_CUT if cut else 0]), ESC + b"iA\x01",
        ESC + b"iK" + bytes([CUT_AT_END if cut else 0]), ESC + b"id" + struct.pack("<H", feed),
        raster_lines(packed_white_is_one, size, media), PRINT_LAST_PAGE,
    ])  # fmt: skip
