"""Graphics stored in the printer's memory: `~DG` to download one, `^XG` to recall it onto
a label, `^ID` to delete it (ZPL II Programming Guide: `~DG` Download Graphics, `^XG`
Recall Graphic, `^ID` Object Delete).

This is how CUPS's own Zebra driver (`rastertolabel`) prints a page: it downloads the
raster as `~DGR:CUPS.GRF,t,w,data` (ASCII hex in the compression scheme of graphics.py),
then a format that recalls it (`^FO0,0^XGR:CUPS.GRF,1,1^FS`), then one that deletes it.

Objects are named `d:o.x`: the device (`R:` memory, the default; `E:` flash, `B:`,
`A:`), a name of up to 8 characters (`UNKNOWN` when none is given) and the extension,
`.GRF` for a graphic. Names are matched case-insensitively; `^ID` takes `*` and `?`
wildcards. What is stored stays until deleted, for as long as the connection it came
on (the emulator's printers keep no memory across connections), within a bound.
"""

from __future__ import annotations

import fnmatch
import logging

from PIL import Image

from badgeline.emulator.label import MAX_LABEL_LENGTH_DOTS, MAX_LABEL_WIDTH_DOTS
from badgeline.emulator.zpl.graphics import GraphicError, decode_graphic_field

logger = logging.getLogger(__name__)

# All stored graphics together, in bytes of dots (a 4 x 6 in label at 300 dpi is
# about 270 KB): a stream downloading more cannot exhaust the emulator's memory.
MAX_STORED_BYTES = 8 * 1024 * 1024
# ^XG magnification: 1 to 10 in each direction.
MAX_MAGNIFICATION = 10


def object_name(text: str, default_name: str = "UNKNOWN") -> str:
    """`d:o.x` with its defaults filled in, upper case: `CUPS.GRF` is `R:CUPS.GRF`."""
    text = text.strip().upper()
    device, colon, rest = text.partition(":")
    if not colon:
        device, rest = "R", text
    name, dot, extension = rest.partition(".")
    return f"{device or 'R'}:{name or default_name}.{extension if dot else 'GRF'}"


class GraphicStore:
    """The graphics one connection has downloaded, by object name."""

    def __init__(self) -> None:
        self._graphics: dict[str, Image.Image] = {}
        self.refused = 0  # downloads not stored: bad data, or memory full

    def download(self, params: bytes) -> None:
        """`~DG` parameters: `d:o.x,t,w,data`."""
        fields = params.split(b",", 3)
        if len(fields) < 4:
            self._refuse("~DG needs d:o.x,t,w and data")
            return
        name = object_name(fields[0].decode("latin-1"))
        try:
            image = decode_graphic_field(b"A," + fields[1] + b"," + b",".join(fields[1:]))
        except GraphicError as error:
            self._refuse(f"~DG {name}: {error}")
            return
        others = sum(_size(stored) for key, stored in self._graphics.items() if key != name)
        if others + _size(image) > MAX_STORED_BYTES:
            self._refuse(f"~DG {name}: memory full")
            return
        self._graphics[name] = image

    def recall(self, params: str) -> Image.Image | None:
        """`^XG` parameters: `d:o.x,mx,my`; the graphic magnified, or None when not stored."""
        name, *scales = params.split(",")
        image = self._graphics.get(object_name(name))
        if image is None:
            logger.warning("^XG %s: no such graphic stored", object_name(name))
            return None
        across, along = (_magnification(value) for value in [*scales, "", ""][:2])
        if (across, along) == (1, 1):
            return image
        width = min(image.width * across, MAX_LABEL_WIDTH_DOTS)
        length = min(image.height * along, MAX_LABEL_LENGTH_DOTS)
        return image.resize((width, length), Image.Resampling.NEAREST)

    def delete(self, params: str) -> None:
        """`^ID` parameters: `d:o.x`, with `*` and `?` wildcards."""
        pattern = object_name(params, default_name="*")
        for name in [key for key in self._graphics if fnmatch.fnmatchcase(key, pattern)]:
            del self._graphics[name]

    def names(self) -> list[str]:
        return sorted(self._graphics)

    def _refuse(self, reason: str) -> None:
        self.refused += 1
        logger.warning("graphic not stored: %s", reason)


def _size(image: Image.Image) -> int:
    return (image.width + 7) // 8 * image.height


def _magnification(text: str) -> int:
    try:
        return max(1, min(int(text.strip()), MAX_MAGNIFICATION))
    except ValueError:
        return 1
