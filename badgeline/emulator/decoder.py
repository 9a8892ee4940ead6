"""Incremental ESC/POS decoder: bytes in (split anywhere), status requests and cut pages out.

Data-carrying commands (raster and graphics images, downloaded characters,
barcodes, 2D codes) are consumed by the lengths their headers announce,
streaming (stream.py), so a header that claims gigabytes costs no memory
and a command split across TCP reads decodes the same as one read whole. A
real-time status request inside another command's data is data, as on a
real printer: raster bytes may contain 0x10 0x04.

This module reads text, the print and paper commands, images, cuts and the
real-time commands; symbols.py the barcodes and QR codes. What the printer
prints goes onto the page in the order it arrives (page.py). Commands are
named as in Epson's ESC/POS Command Reference.

The decoder never raises on input: unknown commands are skipped (the
command byte with its prefix) and counted in `unknown_commands`; barcodes
and 2D codes it does not draw are counted in `skipped_symbols`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from PIL import Image

from badgeline.emulator.commands import (
    ALIGNMENTS,
    CODEPAGES,
    CUT_ONLY,
    CUT_WITH_FEED,
    DC4,
    DEFAULT_CODEPAGE,
    DLE,
    DLE_DC4_PARAMS,
    ENQ,
    EOT,
    ESC,
    ESC_PARAMS,
    FF,
    FS,
    FS_PARAMS,
    GS,
    GS_PARAMS,
    HT,
    LF,
    PARTIAL_CUTS,
    PROCESS_ID_CLASS,
    PROCESS_ID_FUNCTION,
    PROCESS_ID_LENGTH,
    RASTER_DOT_SCALE,
    TAB_STOPS_MAX,
)
from badgeline.emulator.language import Query
from badgeline.emulator.page import MAX_RASTER_WIDTH_DOTS, Page
from badgeline.emulator.stream import NEED_MORE
from badgeline.emulator.symbols import BARCODE_SETTINGS, TWO_D_CLASS, SymbolDecoder

_TEXT_RUN = re.compile(rb"[\x20-\xff]+")


@dataclass(frozen=True)
class StatusRequest(Query):
    """`DLE EOT n`: the host wants one status byte now."""

    query: int


@dataclass(frozen=True)
class PageCut:
    """A cut after content: one physical piece of paper, if the printer can print."""

    page: Page
    partial: bool


@dataclass(frozen=True)
class ProcessIdRequest:
    """`GS ( H` fn 48: answer `37 22 d1..d4 00` once everything before it is processed.

    Unlike DLE EOT this is not a real-time command: it waits its turn behind
    the data received before it, and for printing data "processed" means on
    paper (Epson's ESC/POS reference, GS ( H <Function 48>).
    """

    process_id: bytes  # d1..d4, each 0x20..0x7E


Event = StatusRequest | PageCut | ProcessIdRequest


class EscPosDecoder(SymbolDecoder):
    def __init__(self) -> None:
        super().__init__()
        self._events: list[Event] = []
        self._user_chars_left = 0
        self._user_char_height = 0
        self._codepage = DEFAULT_CODEPAGE

    def feed(self, data: bytes) -> list[Event]:
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

    # ------------------------------------------------------------ dispatch

    def _consume(self, pos: int) -> int:
        streamed = self._stream(pos)
        if streamed is not None:
            return streamed
        if self._user_chars_left:
            return self._start_user_char(pos)
        byte = self._buffer[pos]
        if byte >= 0x20:
            return self._take_text(pos)
        handler = _LEADING_BYTES.get(byte)
        if handler is None:
            return 1  # other C0 controls (CR, CAN, BEL...) change nothing on paper
        return handler(self, pos)

    # ------------------------------------------------------------ streaming states

    def _start_user_char(self, pos: int) -> int:
        # ESC & y c1 c2 [x d1..d(y*x)]...: one width byte, then its columns.
        self._user_chars_left -= 1
        self._skip_bytes = self._user_char_height * self._buffer[pos]
        return 1

    # ------------------------------------------------------------ text

    def _take_text(self, pos: int) -> int:
        match = _TEXT_RUN.match(self._buffer, pos)
        assert match is not None
        self._builder.append_text(match.group().decode(self._codepage, errors="replace"))
        return match.end() - pos

    def _tab(self, pos: int) -> int:
        self._builder.tab()
        return 1

    def _line_feed(self, pos: int) -> int:
        self._builder.end_line()
        return 1

    def _form_feed(self, pos: int) -> int:
        self._builder.end_line(keep_blank=False)
        return 1

    # ------------------------------------------------------------ raster and cut

    def _start_raster(self, mode: int, width_bytes: int, height: int) -> None:
        size = width_bytes * height
        if size == 0:
            return
        if width_bytes * 8 > MAX_RASTER_WIDTH_DOTS:
            self._builder.mark_truncated()
            self._skip_bytes = size
            return
        dot_scale = RASTER_DOT_SCALE.get(mode % 48, (1, 1))

        def print_raster(data: bytes) -> None:
            # ESC/POS sets a bit for a black dot; PIL's "1;I" raw mode reads exactly that.
            image = Image.frombytes("1", (width_bytes * 8, height), data, "raw", "1;I")
            self._builder.add_raster(image, dot_scale)

        self._collect(size, print_raster, is_content=True)

    def _cut(self, partial: bool) -> None:
        page = self._builder.cut()
        if page is not None:
            self._events.append(PageCut(page, partial))

    # ------------------------------------------------------------ ESC

    def _esc(self, pos: int) -> int:
        if self._available(pos) < 2:
            return NEED_MORE
        command = self._buffer[pos + 1]
        variable = _ESC_VARIABLE.get(command)
        if variable is not None:
            return variable(self, pos)
        params = ESC_PARAMS.get(command)
        if params is None:
            return self._unknown(2)
        size = self._fixed(pos, params)
        if size != NEED_MORE:
            self._apply_esc(command, self._buffer[pos + 2 : pos + size])
        return size

    def _apply_esc(self, command: int, params: bytearray) -> None:
        style = self._builder.style
        if command == 0x40:  # ESC @ clears the line buffer and every mode
            self._builder.reset_line_and_style()
            self._reset_symbols()
            self._codepage = DEFAULT_CODEPAGE
        elif command == 0x21:  # ESC ! n: bit 3 bold, bit 4 double height, bit 5 double width
            bold, wide, tall = (bool(params[0] & bit) for bit in (0x08, 0x20, 0x10))
            self._builder.style = replace(
                style, bold=bold, width_scale=1 + wide, height_scale=1 + tall
            )
        elif command == 0x45:  # ESC E n
            self._builder.style = replace(style, bold=bool(params[0] & 1))
        elif command == 0x61:  # ESC a n; Epson ignores values it does not know
            self._builder.style = replace(style, align=ALIGNMENTS.get(params[0], style.align))
        else:
            self._apply_esc_paper(command, params)

    def _apply_esc_paper(self, command: int, params: bytearray) -> None:
        if command == 0x64:  # ESC d n: Print and feed n lines
            self._builder.feed_lines(params[0])
        elif command == 0x4A:  # ESC J n: Print and feed paper, n dots (motion units)
            self._builder.feed_dots(params[0])
        elif command in (0x69, 0x6D):  # ESC i / ESC m: partial cut
            self._cut(partial=True)
        elif command == 0x74:  # ESC t n
            self._codepage = CODEPAGES.get(params[0], self._codepage)

    def _esc_bit_image(self, pos: int) -> int:
        """`ESC * m nL nH d...`: column image, skipped (agents send GS v 0)."""
        if self._available(pos) < 5:
            return NEED_MORE
        columns = self._buffer[pos + 3] | self._buffer[pos + 4] << 8
        self._skip_bytes = columns * (3 if self._buffer[pos + 2] in (32, 33) else 1)
        return 5

    def _esc_user_chars(self, pos: int) -> int:
        """`ESC & y c1 c2 [x d...]...`: downloaded characters, skipped."""
        if self._available(pos) < 5:
            return NEED_MORE
        first, last = self._buffer[pos + 3], self._buffer[pos + 4]
        self._user_char_height = self._buffer[pos + 2]
        self._user_chars_left = max(0, last - first + 1)
        return 5

    def _esc_tab_stops(self, pos: int) -> int:
        self._skip_until_nul = TAB_STOPS_MAX + 1
        return 2

    # ------------------------------------------------------------ GS

    def _gs(self, pos: int) -> int:
        if self._available(pos) < 2:
            return NEED_MORE
        command = self._buffer[pos + 1]
        variable = _GS_VARIABLE.get(command)
        if variable is not None:
            return variable(self, pos)
        params = GS_PARAMS.get(command)
        if params is None:
            return self._unknown(2)
        size = self._fixed(pos, params)
        if size == NEED_MORE:
            return size
        if command == 0x21:  # GS ! n: width and height multipliers
            size_mode = self._buffer[pos + 2]
            width, height = (size_mode >> 4 & 0x07) + 1, (size_mode & 0x07) + 1
            self._builder.style = replace(
                self._builder.style, width_scale=width, height_scale=height
            )
        elif command in BARCODE_SETTINGS:
            self._apply_barcode_setting(command, self._buffer[pos + 2])
        return size

    def _gs_raster(self, pos: int) -> int:
        """`GS v 0 m xL xH yL yH d...`: the badge image."""
        if self._available(pos) < 3:
            return NEED_MORE
        if self._buffer[pos + 2] != 0x30:
            return self._unknown(2)
        if self._available(pos) < 8:
            return NEED_MORE
        header = self._buffer[pos + 3 : pos + 8]
        self._start_raster(header[0], header[1] | header[2] << 8, header[3] | header[4] << 8)
        return 8

    def _gs_cut(self, pos: int) -> int:
        """`GS V m` or `GS V m n`."""
        if self._available(pos) < 3:
            return NEED_MORE
        mode = self._buffer[pos + 2]
        if mode in CUT_ONLY:
            size = 3
        elif mode in CUT_WITH_FEED:
            size = 4
        else:
            return self._unknown(3)
        if self._available(pos) < size:
            return NEED_MORE
        self._cut(partial=mode in PARTIAL_CUTS)
        return size

    def _gs_graphics_long(self, pos: int) -> int:
        """`GS 8 L p1 p2 p3 p4 data`: graphics with a 32-bit length, skipped."""
        if self._available(pos) < 3:
            return NEED_MORE
        if self._buffer[pos + 2] != 0x4C:
            return self._unknown(2)
        if self._available(pos) < 7:
            return NEED_MORE
        self._skip_bytes = int.from_bytes(self._buffer[pos + 3 : pos + 7], "little")
        return 7

    def _gs_downloaded_image(self, pos: int) -> int:
        """`GS * x y d...`: x*y*8 bytes of image data, skipped."""
        if self._available(pos) < 4:
            return NEED_MORE
        self._skip_bytes = self._buffer[pos + 2] * self._buffer[pos + 3] * 8
        return 4

    def _gs_lparen(self, pos: int) -> int:
        """`GS ( fn pL pH ...`: length-prefixed; `GS ( H` fn 48 m 48 asks for a process ID."""
        if self._available(pos) < 5:
            return NEED_MORE
        command, length = self._buffer[pos + 2], self._buffer[pos + 3 : pos + 5]
        if command == TWO_D_CLASS:
            return self._gs_two_d(pos)
        if command != PROCESS_ID_CLASS or length != PROCESS_ID_LENGTH:
            return self._length_prefixed(pos)
        if self._available(pos) < 11:
            return NEED_MORE
        if self._buffer[pos + 5 : pos + 7] == PROCESS_ID_FUNCTION:
            self._events.append(ProcessIdRequest(bytes(self._buffer[pos + 7 : pos + 11])))
        return 11

    # ------------------------------------------------------------ DLE and FS

    def _dle(self, pos: int) -> int:
        if self._available(pos) < 3:
            return NEED_MORE
        command, function = self._buffer[pos + 1], self._buffer[pos + 2]
        if command == EOT:
            return self._dle_eot(pos, function)
        if command == ENQ:
            return 3  # error recovery: the control API decides when a fault clears
        if command == DC4:
            return self._fixed(pos, 1 + DLE_DC4_PARAMS.get(function, 0))
        return self._unknown(1)

    def _dle_eot(self, pos: int, query: int) -> int:
        if query in (7, 8):  # DLE EOT 7 a / DLE EOT 8 a: extended status, not emulated
            return self._fixed(pos, 2)
        if 1 <= query <= 4:
            self._events.append(StatusRequest(query))
        return 3

    def _fs(self, pos: int) -> int:
        if self._available(pos) < 2:
            return NEED_MORE
        command = self._buffer[pos + 1]
        if command == 0x28:
            return self._length_prefixed(pos)
        params = FS_PARAMS.get(command)
        if params is None:
            return self._unknown(2)
        return self._fixed(pos, params)


_Handler = Callable[[EscPosDecoder, int], int]

_LEADING_BYTES: dict[int, _Handler] = {
    HT: EscPosDecoder._tab,
    LF: EscPosDecoder._line_feed,
    FF: EscPosDecoder._form_feed,
    DLE: EscPosDecoder._dle,
    ESC: EscPosDecoder._esc,
    FS: EscPosDecoder._fs,
    GS: EscPosDecoder._gs,
}
_ESC_VARIABLE: dict[int, _Handler] = {
    0x26: EscPosDecoder._esc_user_chars,
    0x28: EscPosDecoder._length_prefixed,
    0x2A: EscPosDecoder._esc_bit_image,
    0x44: EscPosDecoder._esc_tab_stops,
}
_GS_VARIABLE: dict[int, _Handler] = {
    0x28: EscPosDecoder._gs_lparen,
    0x2A: EscPosDecoder._gs_downloaded_image,
    0x38: EscPosDecoder._gs_graphics_long,
    0x56: EscPosDecoder._gs_cut,
    0x6B: SymbolDecoder._gs_barcode,
    0x76: EscPosDecoder._gs_raster,
}
