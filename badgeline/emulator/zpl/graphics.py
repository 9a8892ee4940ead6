"""`^GF` graphic fields: the dots of an image, in every encoding a Zebra accepts.

ZPL II Programming Guide: `^GF` Graphic Field (`^GFa,b,c,d,data`: a the
format, A ASCII hex, B binary, C compressed binary; b the bytes sent; c the
graphic field count, the bytes of the image; d the bytes per row), with

- ASCII hex and the ZPL compression scheme ("Alternative Data Compression
  Scheme for ~DG and ~DB Commands"): G to Y repeat the next hex digit 1 to 19
  times, g to z 20 to 400 times, and repeat counts add up (`hK` is 43); a
  comma fills the rest of the row with 0, `!` with 1 (F), and a colon repeats
  the previous row;
- B64 and Z64 ("ZB64 Encoding and Compression", "B64 and Z64 Encoding"):
  `:B64:data:crc` is the image in MIME Base64, `:Z64:data:crc` LZ77 (zlib)
  compressed first, and crc four hex digits of the CRC across the encoded
  data. "A CRC mismatch is treated as an aborted download": the field is
  not printed.

A 1 bit is a dot the head burns, the leftmost dot the most significant bit.
Compressed binary (C) is not described in the guide and is refused.
"""

from __future__ import annotations

import base64
import binascii
import re
import zlib

from PIL import Image

from badgeline.emulator.label import MAX_LABEL_LENGTH_DOTS, MAX_LABEL_WIDTH_DOTS

_WHITESPACE = re.compile(rb"\s+")
_PLAIN_HEX = re.compile(rb"[0-9A-Fa-f]*")
_HEX_DIGITS = frozenset(b"0123456789ABCDEFabcdef")


class GraphicError(ValueError):
    """Why a graphic field cannot be printed."""


def decode_graphic_field(params: bytes) -> Image.Image:
    """`a,b,c,d,data` (what follows `^GF`) as a mode "1" image, black where a dot prints."""
    fields = params.split(b",", 4)
    if len(fields) < 5:
        raise GraphicError("^GF needs a,b,c,d and data")
    kind = (fields[0].strip() or b"A").upper()
    try:
        sent, total, row_bytes = (int(field) for field in fields[1:4])
    except ValueError:
        raise GraphicError("^GF b, c and d must be numbers") from None
    if row_bytes < 1 or total < row_bytes:
        raise GraphicError(f"^GF field count {total} and bytes per row {row_bytes} make no row")
    rows = total // row_bytes
    if row_bytes * 8 > MAX_LABEL_WIDTH_DOTS or rows > MAX_LABEL_LENGTH_DOTS:
        raise GraphicError(f"^GF of {row_bytes * 8} x {rows} dots exceeds the label bounds")
    data = fields[4]
    if kind == b"A":
        raw = _ascii_data(data, total, row_bytes)
    elif kind == b"B":
        raw = data[:sent]
    else:
        raise GraphicError(f"^GF format {kind.decode(errors='replace')} is not modelled")
    raw = raw[: rows * row_bytes].ljust(rows * row_bytes, b"\0")
    # "1;I": a set bit is a black pixel (0), as the head burns it.
    return Image.frombytes("1", (row_bytes * 8, rows), raw, "raw", "1;I")


def _ascii_data(data: bytes, total: int, row_bytes: int) -> bytes:
    data = _WHITESPACE.sub(b"", data)
    if data.startswith((b":B64:", b":Z64:")):
        return _zb64(data, total)
    if _PLAIN_HEX.fullmatch(data) and len(data) % 2 == 0:
        return bytes.fromhex(data.decode("ascii"))[:total]
    return _compressed_hex(data, total, row_bytes)


def _zb64(data: bytes, total: int) -> bytes:
    """`:B64:encoded:crc` or `:Z64:encoded:crc` (the whitespace already removed)."""
    encoded, colon, crc = data[5:].rpartition(b":")
    if not colon or len(crc) != 4 or not _PLAIN_HEX.fullmatch(crc):
        raise GraphicError("a B64/Z64 field ends :crc, four hex digits")
    if binascii.crc_hqx(encoded, 0) != int(crc, 16):
        raise GraphicError("CRC mismatch: the download is aborted")
    try:
        decoded = base64.b64decode(encoded, validate=True)
    except binascii.Error:
        raise GraphicError("the B64/Z64 data is not Base64") from None
    if data.startswith(b":B64:"):
        return decoded
    inflater = zlib.decompressobj()
    try:
        # At most the image's size, however much a hostile stream claims to inflate to.
        return inflater.decompress(decoded, total)
    except zlib.error:
        raise GraphicError("the Z64 data is not zlib (LZ77) compressed") from None


def _compressed_hex(data: bytes, total: int, row_bytes: int) -> bytes:
    rows = _Rows(2 * row_bytes)
    count = 0
    for char in data:
        if 0x47 <= char <= 0x59:  # G..Y: 1..19
            count += char - 0x46
        elif 0x67 <= char <= 0x7A:  # g..z: 20..400
            count += (char - 0x66) * 20
        elif char in _HEX_DIGITS:
            rows.digit(char, count or 1, total)
            count = 0
        elif char in b",!:":
            rows.fill(char)
            count = 0
        else:
            raise GraphicError(f"{chr(char)!r} is not ZPL graphic data")
        if len(rows.out) >= total:
            break
    rows.finish()
    return bytes(rows.out[:total])


class _Rows:
    """Hex digits gathered into rows of the image."""

    def __init__(self, row_digits: int) -> None:
        self.row_digits = row_digits
        self.out = bytearray()
        self._row = bytearray()
        self._previous = b"0" * row_digits  # a colon before any row repeats a blank one

    def digit(self, char: int, repeat: int, total: int) -> None:
        while repeat and len(self.out) < total:
            taken = min(repeat, self.row_digits - len(self._row))
            self._row.extend(bytes([char]) * taken)
            repeat -= taken
            if len(self._row) == self.row_digits:
                self._end_row()

    def fill(self, char: int) -> None:
        """`,` zeros to the end of the row, `!` ones, `:` the previous row."""
        fill = (b"0" if char == 0x2C else b"F") * self.row_digits
        source = self._previous if char == 0x3A else fill
        self._row.extend(source[len(self._row) :])
        self._end_row()

    def finish(self) -> None:
        if self._row:
            self.fill(0x2C)

    def _end_row(self) -> None:
        self._previous = bytes(self._row)
        self.out.extend(bytes.fromhex(self._previous.decode("ascii")))
        self._row = bytearray()
