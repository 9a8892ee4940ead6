"""ESC/POS command bytes and parameter lengths, as Epson's command reference lists them.

The decoder needs a length for every command it might meet, not only for the
ones it acts on: skipping a command by the wrong length would turn its
parameters into text or, worse, into the start of another command.
"""

from __future__ import annotations

from badgeline.emulator.page import Align

HT, LF, FF = 0x09, 0x0A, 0x0C
DLE, EOT, ENQ, DC4 = 0x10, 0x04, 0x05, 0x14
ESC, FS, GS = 0x1B, 0x1C, 0x1D

DEFAULT_CODEPAGE = "cp437"
# ESC t n -> Python codec, for the pages Epson printers share with Python.
CODEPAGES = {
    0: "cp437", 2: "cp850", 3: "cp860", 4: "cp863", 5: "cp865",
    16: "cp1252", 17: "cp866", 18: "cp852", 19: "cp858",
}  # fmt: skip

# Command byte -> parameter count, for fixed-length commands after ESC / GS / FS.
ESC_PARAMS = {
    0x0C: 0, 0x20: 1, 0x21: 1, 0x24: 2, 0x25: 1, 0x2D: 1, 0x32: 0, 0x33: 1, 0x3C: 0,
    0x3D: 1, 0x3F: 1, 0x40: 0, 0x45: 1, 0x47: 1, 0x4A: 1, 0x4B: 1, 0x4C: 0, 0x4D: 1,
    0x52: 1, 0x53: 0, 0x54: 1, 0x56: 1, 0x57: 8, 0x5C: 2, 0x61: 1, 0x63: 2, 0x64: 1,
    0x65: 1, 0x66: 2, 0x69: 0, 0x6D: 0, 0x70: 3, 0x72: 1, 0x74: 1, 0x75: 1, 0x76: 0,
    0x7B: 1,
}  # fmt: skip
GS_PARAMS = {
    0x21: 1, 0x24: 2, 0x2F: 1, 0x3A: 0, 0x42: 1, 0x45: 1, 0x48: 1, 0x49: 1, 0x4C: 2,
    0x50: 2, 0x54: 1, 0x57: 2, 0x5C: 2, 0x5E: 3, 0x61: 1, 0x62: 1, 0x63: 0, 0x66: 1,
    0x67: 4, 0x68: 1, 0x6A: 1, 0x72: 1, 0x77: 1, 0x7A: 3,
}  # fmt: skip
FS_PARAMS = {
    0x21: 1, 0x26: 0, 0x2D: 1, 0x2E: 0, 0x32: 74, 0x3F: 2, 0x43: 1, 0x53: 2, 0x57: 1,
    0x70: 2,
}  # fmt: skip
# DLE DC4 fn -> parameters after fn (pulse, power-off, buzzer, status, clear buffer).
DLE_DC4_PARAMS = {1: 2, 2: 2, 3: 5, 7: 1, 8: 7}

# GS ( H pL pH fn m d1..d4: fn 48 m 48 is the process ID response (pL 6, pH 0).
PROCESS_ID_CLASS = 0x48
PROCESS_ID_FUNCTION = b"00"
PROCESS_ID_LENGTH = b"\x06\x00"

CUT_ONLY = frozenset({0, 1, 48, 49})  # GS V m
CUT_WITH_FEED = frozenset({65, 66, 97, 98, 103, 104})  # GS V m n
PARTIAL_CUTS = frozenset({1, 49, 66, 98, 104})
# ESC a n takes 0..2 or the ASCII digits '0'..'2'.
ALIGNMENTS = {0: Align.LEFT, 1: Align.CENTER, 2: Align.RIGHT, 48: Align.LEFT, 49: Align.CENTER,
              50: Align.RIGHT}  # fmt: skip
RASTER_DOT_SCALE = {0: (1, 1), 1: (2, 1), 2: (1, 2), 3: (2, 2)}
TAB_STOPS_MAX = 32
