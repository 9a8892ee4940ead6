"""Incremental Brother QL raster decoder: bytes in (split anywhere), queries and labels out.

Raster Command Reference (QL-800/810W/820NWB, QL-1100/1110NWB), 4. Printing
Command Details; each command as it is named there:

    00h            Invalidate: skipped
    ESC @          Initialize: settings back to their defaults, the page
                   being received dropped
    ESC i S        Status information request: answered at once (status.py)
    ESC i a n      Switch dynamic command mode (1: raster; the only mode here)
    ESC i ! n      Switch automatic status notification mode (0 notify, 1 not)
    ESC i z n1..n10  Print information: valid flags, media type, width and
                   length (mm), raster number, starting page. Media the
                   flags mark valid that is not the loaded roll is refused
                   with "replace media" (error information 2, bit 0)
    ESC i M n      Various mode: bit 6 auto cut
    ESC i A n      Specify the page number in "cut each * labels"
    ESC i K n      Expanded mode: bit 3 cut at end, bit 6 high resolution
    ESC i d n1 n2  Specify margin amount (feed, dots)
    M n            Select compression mode: 02h TIFF (PackBits), 00h none
    g 00h n d1..dn Raster graphics transfer: one line
    w c n d1..dn   Two-color raster graphics transfer (c 01h black, 02h red;
                   both print as dots here)
    Z              Zero raster graphics: a blank line
    FF             Print command: the page ends, more follow
    Control-Z      Print command with feeding: the last page ends

A raster line drives the pins from the far end of the head (2.3.5 Raster
line: drivers mirror the label into it), so the page is mirrored back and
cut to the loaded roll's printable pins (media.py) to be the label as it
comes out. The decoder never raises on input: an unknown command byte is
skipped and counted in `unknown_commands`.
"""

from __future__ import annotations

from dataclasses import dataclass

from PIL import Image

from badgeline.emulator.brother_ql.media import DPI, Model, Roll, margin_pins, roll_for
from badgeline.emulator.label import MAX_LABEL_LENGTH_DOTS, Label
from badgeline.emulator.language import LabelCut, Query
from badgeline.emulator.state import PrinterCondition

NULL, ESC, FF, SUB = 0x00, 0x1B, 0x0C, 0x1A
# ESC i x -> parameter bytes
_ESC_I_PARAMS = {0x53: 0, 0x61: 1, 0x21: 1, 0x7A: 10, 0x4D: 1, 0x41: 1, 0x4B: 1, 0x64: 2}
AUTO_CUT = 0x40
HIGH_RESOLUTION = 0x40
TIFF = 0x02
# ESC i z n1: which of media type, width and length are valid
TYPE_VALID, WIDTH_VALID, LENGTH_VALID = 0x02, 0x04, 0x08
NEED_MORE = 0


@dataclass(frozen=True)
class StatusInformationRequest(Query):
    """`ESC i S`: the 32-byte status, at once."""


@dataclass
class _PrintInformation:
    valid: int
    media_type: int
    width_mm: int
    length_mm: int
    raster_lines: int


class BrotherQlDecoder:
    def __init__(self, model: Model, condition: PrinterCondition | None = None) -> None:
        self.model = model
        self.unknown_commands = 0
        self.skipped_symbols = 0
        self.notify = True  # ESC i ! 0
        self._condition = condition or PrinterCondition()
        self._buffer = bytearray()
        self._events: list[object] = []
        self._rows: list[bytes] = []
        self._truncated = False
        self._initialize()

    @property
    def has_pending_content(self) -> bool:
        return bool(self._rows)

    @property
    def various_mode(self) -> int:
        """The ESC i M value, which status byte 15 reports."""
        return self._mode

    def feed(self, data: bytes) -> list[object]:
        self._buffer += data
        self._events = []
        pos = 0
        while pos < len(self._buffer):
            used = self._consume(pos)
            if used == NEED_MORE:
                break
            pos += used
        del self._buffer[:pos]
        return self._events

    def _initialize(self) -> None:
        self._mode = 0
        self._compressed = False
        self._high_resolution = False
        self._information: _PrintInformation | None = None
        self._rows = []
        self._truncated = False

    # ------------------------------------------------------------ dispatch

    def _available(self, pos: int) -> int:
        return len(self._buffer) - pos

    def _consume(self, pos: int) -> int:
        byte = self._buffer[pos]
        if byte == NULL:
            return 1
        if byte == ESC:
            return self._escape(pos)
        if byte in (0x67, 0x77):  # g, w
            return self._raster_line(pos, two_color=byte == 0x77)
        if byte == 0x5A:  # Z
            self._add_row(bytes(self.model.line_bytes))
            return 1
        if byte == 0x4D:  # M n
            if self._available(pos) < 2:
                return NEED_MORE
            self._compressed = self._buffer[pos + 1] == TIFF
            return 2
        if byte in (FF, SUB):
            self._print()
            return 1
        self.unknown_commands += 1
        return 1

    def _escape(self, pos: int) -> int:
        if self._available(pos) < 2:
            return NEED_MORE
        command = self._buffer[pos + 1]
        if command == 0x40:  # ESC @
            self._initialize()
            return 2
        if command != 0x69:  # ESC i
            self.unknown_commands += 1
            return 2
        if self._available(pos) < 3:
            return NEED_MORE
        function = self._buffer[pos + 2]
        params = _ESC_I_PARAMS.get(function)
        if params is None:
            self.unknown_commands += 1
            return 3
        if self._available(pos) < 3 + params:
            return NEED_MORE
        self._apply(function, bytes(self._buffer[pos + 3 : pos + 3 + params]))
        return 3 + params

    def _apply(self, function: int, params: bytes) -> None:
        if function == 0x53:  # S
            self._events.append(StatusInformationRequest())
        elif function == 0x61 and params[0] != 1:  # a: only raster mode is emulated
            self.unknown_commands += 1
        elif function == 0x21:  # !
            self.notify = params[0] == 0
        elif function == 0x7A:  # z
            lines = int.from_bytes(params[4:8], "little")
            self._information = _PrintInformation(params[0], params[1], params[2], params[3],
                                                  lines)  # fmt: skip
        elif function == 0x4D:  # M
            self._mode = params[0]
        elif function == 0x4B:  # K
            self._high_resolution = bool(params[0] & HIGH_RESOLUTION)

    # ------------------------------------------------------------ raster

    def _raster_line(self, pos: int, two_color: bool) -> int:
        if self._available(pos) < 3:
            return NEED_MORE
        color, size = self._buffer[pos + 1], self._buffer[pos + 2]
        if self._available(pos) < 3 + size:
            return NEED_MORE
        data = bytes(self._buffer[pos + 3 : pos + 3 + size])
        line = _unpack_bits(data) if self._compressed else data
        width = self.model.line_bytes
        if len(line) != width:
            self._truncated = True
            line = line[:width].ljust(width, b"\0")
        if two_color and color == 0x02 and self._rows:
            # The red line of a row follows its black line: both are dots on paper.
            black = self._rows[-1]
            self._rows[-1] = bytes(a | b for a, b in zip(black, line, strict=True))
        else:
            self._add_row(line)
        return 3 + size

    def _add_row(self, line: bytes) -> None:
        if len(self._rows) >= MAX_LABEL_LENGTH_DOTS:
            self._truncated = True
            return
        self._rows.append(line)

    def _print(self) -> None:
        rows, self._rows = self._rows, []
        truncated, self._truncated = self._truncated, False
        if not rows:
            return
        pins = self.model.pins
        raster = Image.frombytes("1", (pins, len(rows)), b"".join(rows), "raw", "1;I")
        raster = raster.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
        roll = self.loaded_roll()
        right = pins - margin_pins(self.model, roll)
        label = raster.crop((right - roll.width_dots, 0, right, len(rows)))
        dpi = (DPI, 2 * DPI if self._high_resolution else DPI)
        self._events.append(LabelCut(Label(label, [], truncated, rejection=self._rejection(roll),
                                           dpi=dpi)))  # fmt: skip

    def loaded_roll(self) -> Roll:
        return roll_for(self.model, self._condition.media)

    def _rejection(self, roll: Roll) -> str | None:
        """Why the loaded roll is not what the page's print information asks for."""
        info = self._information
        if info is None:
            return None
        media_type = 0x0B if roll.die_cut else 0x0A
        wrong = (
            (info.valid & TYPE_VALID and info.media_type != media_type)
            or (info.valid & WIDTH_VALID and info.width_mm != roll.width_mm)
            or (info.valid & LENGTH_VALID and info.length_mm != roll.length_mm)
        )
        if not wrong:
            return None
        return (f"replace media: the page is for {info.width_mm}x{info.length_mm} mm, "
                f"the printer has {roll.name} loaded")  # fmt: skip


def _unpack_bits(data: bytes) -> bytes:
    """TIFF PackBits: a header h 0..127 copies h+1 bytes, 129..255 repeats the next byte
    257-h times, 128 is nothing."""
    out = bytearray()
    index = 0
    while index < len(data):
        header = data[index]
        index += 1
        if header < 128:
            out += data[index : index + header + 1]
            index += header + 1
        elif header > 128 and index < len(data):
            out += bytes([data[index]]) * (257 - header)
            index += 1
    return bytes(out)
