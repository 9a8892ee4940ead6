"""Read back the ESC/POS subset the badge encoder writes, independently of the encoder.

Written from the command reference, not from `raster.py`, so that a test
comparing the two catches a misunderstanding in either.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from PIL import Image


@dataclass
class RasterBand:
    bytes_per_row: int
    rows: int
    data: bytes


@dataclass
class PrintedBadge:
    commands: list[str] = field(default_factory=list)  # in order, e.g. "ESC @", "GS v 0"
    bands: list[RasterBand] = field(default_factory=list)
    text_lines: list[str] = field(default_factory=list)

    def raster_image(self, width: int) -> Image.Image:
        """Stack the bands into a mode "1" image `width` dots wide (bit 1 = black dot)."""
        pixels = bytearray()
        for band in self.bands:
            for row in range(band.rows):
                row_bits = band.data[row * band.bytes_per_row : (row + 1) * band.bytes_per_row]
                pixels += b"".join(_BYTE_TO_PIXELS[value] for value in row_bits)[:width]
        height = sum(band.rows for band in self.bands)
        grey = Image.frombytes("L", (width, height), bytes(pixels))
        return grey.convert("1", dither=Image.Dither.NONE)


# Most significant bit is the leftmost dot; a set bit burns a (black) dot.
_BYTE_TO_PIXELS = [
    bytes(0 if value >> (7 - bit) & 1 else 255 for bit in range(8)) for value in range(256)
]


def read_escpos(stream: bytes) -> PrintedBadge:
    badge = PrintedBadge()
    position = 0
    while position < len(stream):
        position = _read_one(stream, position, badge)
    return badge


def _read_one(stream: bytes, position: int, badge: PrintedBadge) -> int:
    if stream.startswith(b"\x1b@", position):
        badge.commands.append("ESC @")
        return position + 2
    if stream.startswith(b"\x1dv0", position):
        mode, x_low, x_high, y_low, y_high = stream[position + 3 : position + 8]
        assert mode == 0, f"unexpected raster mode {mode}"
        bytes_per_row, rows = x_low + 256 * x_high, y_low + 256 * y_high
        data_start = position + 8
        data = stream[data_start : data_start + bytes_per_row * rows]
        assert len(data) == bytes_per_row * rows, "raster data shorter than its header says"
        badge.commands.append("GS v 0")
        badge.bands.append(RasterBand(bytes_per_row, rows, data))
        return data_start + bytes_per_row * rows
    for prefix, name in ((b"\x1ba", "ESC a"), (b"\x1bd", "ESC d")):
        if stream.startswith(prefix, position):
            badge.commands.append(f"{name} {stream[position + 2]}")
            return position + 3
    if stream.startswith(b"\x1dVB", position):
        badge.commands.append(f"GS V 66 {stream[position + 3]}")
        return position + 4
    if 0x20 <= stream[position] <= 0x7E:
        end = stream.index(b"\n", position)
        badge.commands.append("TEXT")
        badge.text_lines.append(stream[position:end].decode("ascii"))
        return end + 1
    raise AssertionError(f"unknown command at byte {position}: {stream[position : position + 8]!r}")
