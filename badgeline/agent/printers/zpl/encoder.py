"""One badge as a ZPL II label format: the badge's dots in a compressed `^GF`, the footer
in the printer's own font.

ZPL II Programming Guide, each command as it is named there:

- `^XA` Start Format ... `^XZ` End Format: one label.
- `^JZY` Reprint After Error: a label an error (paper out, ribbon out, head
  open) interrupted is printed again once it clears. The agent's print
  confirmation (confirmation.py) counts a label out when the printer has no
  label left to print; with reprint off, an interrupted label would be
  dropped and counted out all the same, so every format turns it on.
- `^PW` Print Width (dots), `^LH0,0` Label Home: the badge is laid out from
  the label's corner at the label's width.
- `^MMC` Print Mode cutter, only where the agent is told the printer cuts
  (`[printer] cut = true`); otherwise the printer's own mode (tear-off, peel).
- `^FO x,y` Field Origin, `^GFA,b,c,d,data` Graphic Field: format A with
  data in the ZB64 encoding ("ZB64 Encoding and Compression"): `:Z64:`, the
  image zlib-compressed then Base64 encoded, `:` and the CRC-16 of the
  Base64 text as four hex digits (the XMODEM CRC: `binascii.crc_hqx`, seed
  0). c is the image's bytes, d its bytes per row, b the length of the data.
  A badge of 812 x 609 dots is 62 KB of dots and about 6 KB of Z64.
- `^A0N,h,w` Scalable font 0, `^FB` Field Block (one line, centred), `^FD`
  Field Data, `^FS` Field Separator: the `job <id>` footer, in the band
  below the badge the layout keeps free.
- `^PQ1` Print Quantity: one label.
"""

from __future__ import annotations

import base64
import binascii
import zlib

from badgeline.badge.bits import black_rows
from badgeline.badge.layout import LabelLayout

# ZPL's command prefixes may not appear in field data: a footer with one could
# smuggle commands into the format.
_FORBIDDEN = frozenset("^~")


def z64(dots: bytes) -> str:
    """`:Z64:<base64 of zlib(dots)>:<CRC-16/XMODEM of the base64, 4 hex digits>`."""
    encoded = base64.b64encode(zlib.compress(dots, 9))
    return f":Z64:{encoded.decode('ascii')}:{binascii.crc_hqx(encoded, 0):04X}"


def graphic_field(packed_white_is_one: bytes, width: int, height: int) -> str:
    """`^GFA,b,c,d,:Z64:…` for a packed mode "1" image (1 = white, as Pillow packs it)."""
    row_bytes, dots = black_rows(packed_white_is_one, width)
    if len(dots) != row_bytes * height:
        raise ValueError(f"{len(dots)} bytes are not {height} rows of {row_bytes}")
    data = z64(dots)
    return f"^GFA,{len(data)},{len(dots)},{row_bytes},{data}"


def label_format(
    packed_white_is_one: bytes,
    size: tuple[int, int],
    layout: LabelLayout,
    footer: str | None = None,
    *,
    cut: bool = False,
) -> bytes:
    """The whole label: the badge's picture at the label's corner, the footer under it."""
    width, height = size
    if width != layout.width_dots:
        raise ValueError(f"the picture is {width} dots wide, the label {layout.width_dots}")
    parts = ["^XA", "^JZY", f"^PW{width}", "^LH0,0"]
    if cut:
        parts.append("^MMC")
    parts.append(f"^FO0,0{graphic_field(packed_white_is_one, width, height)}^FS")
    if footer is not None and layout.footer_dots:
        parts.append(_footer_field(footer, width, height - layout.footer_dots, layout.footer_dots))
    parts.extend(["^PQ1", "^XZ"])
    return "".join(parts).encode("ascii")


def _footer_field(footer: str, width: int, top: int, band: int) -> str:
    if not all(" " <= character <= "~" for character in footer) or _FORBIDDEN & set(footer):
        raise ValueError(f"footer must be printable ASCII without ^ or ~: {footer!r}")
    height = max(10, band * 7 // 10)
    offset = top + (band - height) // 2
    return f"^FO0,{offset}^A0N,{height},{height}^FB{width},1,0,C,0^FD{footer}^FS"
