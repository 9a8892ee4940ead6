"""Packed 1-bit rows, as printers want them: 1 is a dot the head burns.

Pillow packs a mode "1" image with 1 = white and pads each row with 0 bits;
printer languages want 1 = black, and their padding white. Pure Python, so
the agent encodes a label without importing Pillow (the render worker sends
the packed pixels).
"""

from __future__ import annotations

_INVERT_BITS = bytes(255 - value for value in range(256))


def black_rows(packed_white_is_one: bytes, width: int) -> tuple[int, bytes]:
    """(bytes per row, the rows with 1 = black and the padding bits past `width` clear)."""
    row_bytes = (width + 7) // 8
    inverted = bytearray(packed_white_is_one.translate(_INVERT_BITS))
    spare_bits = row_bytes * 8 - width
    if spare_bits:
        keep_mask = (0xFF << spare_bits) & 0xFF
        for last_byte in range(row_bytes - 1, len(inverted), row_bytes):
            inverted[last_byte] &= keep_mask
    return row_bytes, bytes(inverted)
