"""Incremental ZPL II decoder: bytes in (split anywhere), host queries and labels out.

A label format runs from `^XA` to `^XZ` (ZPL II Programming Guide, `^XA`
Start Format, `^XZ` End Format); at its end the decoder draws the label
(layout.py) and hands it on with its quantity. Control commands (`~`) act
as they are read, inside a format or not: `~HS` and `~HQES` are answered at
once. Commands are named as in the guide; what each one here does:

- `^FO x,y` / `^FT x,y` field origin / typeset (text by its baseline), from
  the label home `^LH x,y`; `^FD` / `^FV` field data, `^FH` its hex escapes;
  `^FS` ends the field. `^A f o,h,w` and `^CF f,h,w` the font.
- `^GF` graphic fields (graphics.py); `^GB w,h,t,c` graphic boxes.
- `~DG` downloads a graphic to memory, `^XG` recalls it at the field origin,
  `^ID` deletes it (storage.py): what CUPS's `rastertolabel` sends.
- `^PW` print width, `^LL` label length, `^LH` label home, `^MM` print mode
  (what `~HS` reports), `^MT` media type, `^JZ` reprint after error, `^PO`
  print orientation (`I`: the format turned 180 degrees): these stay in force
  from format to format, as the printer keeps them.
- `^PQ q` prints q labels of the format.
- Barcodes and 2D codes (`^B…` but `^BY`) are not drawn: counted in
  `skipped_symbols`. Settings that do not change the picture are passed
  over; any other command is counted in `unknown_commands`. A format with
  no field prints nothing here (some firmware feeds a blank label).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

from PIL import Image

from badgeline.emulator.language import LabelCut, Query
from badgeline.emulator.media import Media
from badgeline.emulator.state import PrinterCondition
from badgeline.emulator.zpl.graphics import GraphicError, decode_graphic_field
from badgeline.emulator.zpl.layout import DEFAULT_FONT, Font, LabelLayout
from badgeline.emulator.zpl.storage import GraphicStore
from badgeline.emulator.zpl.tokens import Command, Tokenizer

logger = logging.getLogger(__name__)

# Commands that change nothing on the emulated label (speed, darkness, sensors,
# orientation defaults, code page, comments, saving settings…).
PASSED_OVER = frozenset({
    "FX", "PR", "MD", "MN", "LS", "LT", "CI", "FW", "JU", "PM", "ML", "MF", "SD",
    "TA", "JM", "JT", "PF", "FB", "BY", "FN", "JS", "PS", "PP", "JA", "JB", "SZ", "PH",
})  # fmt: skip
# ^PQ beyond this is cut to it: each copy costs the emulator a picture.
MAX_COPIES = 1000
# ^MM a -> the print mode digit ~HS reports (string 2, r).
PRINT_MODES = {"R": "0", "P": "1", "T": "2", "C": "3", "A": "4", "D": "5", "F": "9", "K": "K"}


@dataclass(frozen=True)
class HostStatusRequest(Query):
    """`~HS`: the three host status strings, at once."""


@dataclass(frozen=True)
class HostQuery(Query):
    """`~HQxx`: `ES` is the printer status (errors and warnings)."""

    query: str


@dataclass
class Settings:
    """What stays in force across formats (until changed or the printer restarts)."""

    print_width: int | None = None  # ^PW; else the media's width
    label_length: int | None = None  # ^LL; else the media's
    home: tuple[int, int] = (0, 0)  # ^LH
    print_mode: str = "T"  # ^MM: tear-off
    thermal_transfer: bool = False  # ^MT T
    reprint_after_error: bool = True  # ^JZ Y
    inverted: bool = False  # ^PO I
    font: Font = DEFAULT_FONT  # ^CF


@dataclass
class _Field:
    origin: tuple[int, int] = (0, 0)
    baseline: bool = False
    font: Font | None = None
    hex_escape: str | None = None
    data: str | None = None
    symbol: bool = False


class ZplDecoder:
    def __init__(self, condition: PrinterCondition | None = None) -> None:
        self.unknown_commands = 0
        self.skipped_symbols = 0
        self.rejected_graphics = 0
        self.settings = Settings()
        self.graphics = GraphicStore()
        # Without a printer around it (tests), a 4 x 3 in label at 203 dpi.
        self._condition = condition or PrinterCondition(media=Media(203, 812, 609))
        self._tokens = Tokenizer()
        self._events: list[object] = []
        self._layout: LabelLayout | None = None  # a format is open
        self._field = _Field()
        self._copies = 1

    @property
    def has_pending_content(self) -> bool:
        """A format has begun (^XA) and not ended: the partial format flag of ~HS."""
        return self._layout is not None

    def feed(self, data: bytes) -> list[object]:
        self._events = []
        for command in self._tokens.feed(data):
            self._apply(command)
        return self._events

    # ------------------------------------------------------------ dispatch

    def _apply(self, command: Command) -> None:
        name, params = command.name, command.params.decode("latin-1")
        if command.prefix == "~":
            self._control(name, params, command.params)
        elif name == "XA":
            self._start_format()
        elif self._layout is None:
            pass  # format commands outside a format do nothing
        elif name == "XZ":
            self._end_format()
        elif name.startswith("A") or name in ("FO", "FT", "FD", "FV", "FH", "FS", "CF"):
            self._field_command(name, params)
        elif name in ("GF", "XG", "ID"):
            self._graphic_command(name, command.params)
        elif name == "GB":
            self._box(params)
        elif name.startswith("B") and name != "BY":
            self._field.symbol = True
        elif not self._setting(name, params) and name not in PASSED_OVER:
            self.unknown_commands += 1

    def _control(self, name: str, params: str, raw: bytes) -> None:
        if name == "HS":
            self._events.append(HostStatusRequest())
        elif name == "HQ":
            self._events.append(HostQuery(params.upper()))
        elif name == "DG":
            self.graphics.download(raw)
        elif name not in PASSED_OVER:
            self.unknown_commands += 1

    # ------------------------------------------------------------ formats

    def _start_format(self) -> None:
        self._layout = LabelLayout()
        self._field = _Field()
        self._copies = 1

    def _end_format(self) -> None:
        layout, self._layout = self._layout, None
        assert layout is not None
        if not layout.has_fields:
            return
        media, settings = self._condition.media, self.settings
        width = settings.print_width or media.width_dots
        length = media.length_dots if settings.label_length is None else settings.label_length
        label = layout.draw(width, length, media.dpi, settings.reprint_after_error,
                            inverted=settings.inverted)  # fmt: skip
        self._events.append(LabelCut(label, self._copies))

    # ------------------------------------------------------------ fields

    def _field_command(self, name: str, params: str) -> None:
        field = self._field
        if name in ("FO", "FT"):
            x, y = (_number(value, 0) for value in _values(params, 2))
            field.origin, field.baseline = (x, y), name == "FT"
        elif name in ("FD", "FV"):
            field.data = _unescape(params, field.hex_escape)
        elif name == "FH":
            field.hex_escape = params[:1] or "_"
        elif name == "CF":
            self.settings.font = _font(self.settings.font, params[:1], params[1:].lstrip(","))
        elif name == "FS":
            self._end_field()
        else:  # ^A f o,h,w: the font of this field
            field.font = _font(self.settings.font, name[1], params)

    def _end_field(self) -> None:
        field, self._field = self._field, _Field()
        layout = self._layout
        assert layout is not None
        if field.symbol:
            self.skipped_symbols += 1
        elif field.data is not None:
            x, y = self._at(field.origin)
            layout.add_text(x, y, field.data, field.font or self.settings.font, field.baseline)

    def _graphic_command(self, name: str, params: bytes) -> None:
        if name == "GF":
            self._graphic(params)
        elif name == "XG":
            self._recall(params.decode("latin-1"))
        else:
            self.graphics.delete(params.decode("latin-1"))

    def _graphic(self, params: bytes) -> None:
        layout = self._layout
        assert layout is not None
        try:
            image = decode_graphic_field(params)
        except GraphicError as error:
            self.rejected_graphics += 1
            layout.truncated = True
            logger.warning("^GF not printed: %s", error)
            return
        self._place(image)

    def _recall(self, params: str) -> None:
        image = self.graphics.recall(params)
        if image is None:
            assert self._layout is not None
            self._layout.truncated = True
            return
        self._place(image)

    def _place(self, image: Image.Image) -> None:
        layout = self._layout
        assert layout is not None
        x, y = self._at(self._field.origin)
        layout.add_picture(x, y - image.height if self._field.baseline else y, image)

    def _box(self, params: str) -> None:
        layout = self._layout
        assert layout is not None
        width, height, thickness, color, _ = _values(params, 5)
        line = _number(thickness, 1)
        box = (_number(width, line), _number(height, line), line)
        layout.add_box(*self._at(self._field.origin), box, color.strip().upper() != "W")

    def _at(self, origin: tuple[int, int]) -> tuple[int, int]:
        home = self.settings.home
        return home[0] + origin[0], home[1] + origin[1]

    # ------------------------------------------------------------ settings

    def _setting(self, name: str, params: str) -> bool:
        settings, first = self.settings, params.strip()
        if name == "PW":
            settings.print_width = _number(first, 0) or None
        elif name == "LL":
            settings.label_length = _number(params.split(",")[0], 0) or None
        elif name == "LH":
            x, y = (_number(value, 0) for value in _values(params, 2))
            settings.home = (x, y)
        elif name == "MM":
            mode = first[:1].upper()
            settings.print_mode = mode if mode in PRINT_MODES else settings.print_mode
        elif name == "MT":
            settings.thermal_transfer = first[:1].upper() == "T"
        elif name == "JZ":
            settings.reprint_after_error = first[:1].upper() != "N"
        elif name == "PO":
            orientation = first[:1].upper()
            settings.inverted = (
                orientation == "I" if orientation in ("N", "I") else settings.inverted
            )
        elif name == "PQ":
            self._copies = max(1, min(_number(params.split(",")[0], 1), MAX_COPIES))
        else:
            return False
        return True


def _values(params: str, count: int) -> list[str]:
    values = params.split(",")
    return (values + [""] * count)[:count]


def _number(text: str, default: int) -> int:
    try:
        return max(0, int(text.strip()))
    except ValueError:
        return default


def _font(current: Font, name: str, params: str) -> Font:
    orientation, height, width = _values(params, 3)
    orientation = orientation.strip().upper()[:1] or current.orientation
    font = replace(current, name=name or current.name, orientation=orientation)
    height_dots = _number(height, 0)
    if height_dots:
        # A height without a width: the width follows the face's proportions.
        font = replace(font, height=height_dots, width=_number(width, 0))
    elif _number(width, 0):
        font = replace(font, width=_number(width, 0))
    return font


def _unescape(data: str, escape: str | None) -> str:
    """^FH: `_hh` in the field data is the byte hh."""
    if escape is None or escape not in data:
        return data
    out, index = [], 0
    while index < len(data):
        if data[index] == escape and index + 3 <= len(data):
            try:
                out.append(chr(int(data[index + 1 : index + 3], 16)))
                index += 3
                continue
            except ValueError:
                pass
        out.append(data[index])
        index += 1
    return "".join(out)
