"""The 32-byte status a Brother QL sends, as the Raster Command Reference lays it out.

Raster Command Reference (QL-800/810W/820NWB, QL-1100/1110NWB), 4. Printing
Command Details, ESC i S Status information request: "a fixed size of 32
bytes is returned". By offset:

     0  print head mark, 80h      1  size, 20h       2  "B" (42h)
     3  series code, "4" (34h)    4  model code (media.py)
     5  "0" (30h)   6  "0" (30h)  7  00h
     8  error information 1       9  error information 2
    10  media width (mm)         11  media type: 00h none, 0Ah continuous
                                     length tape, 0Bh die-cut labels
    12  number of colours, 00h   13  media length, higher byte
    14  00h                      15  mode (as ESC i M Various mode set it)
    16  density, 00h             17  media length (mm), lower byte
    18  status type: 00h reply to status request, 01h printing completed,
        02h error occurred, 06h phase change
    19  phase type: 00h waiting to receive, 01h printing
    20, 21  phase number, 0000h  22  notification number, 00h (none)
    23..31  00h

Error information 1: 01h no media, 02h end of media (die-cut), 04h cutter
jam, 10h printer in use, 20h printer turned off. Error information 2: 01h
replace media (the job's ESC i z media is not the loaded one), 02h
expansion buffer full, 04h communication error, 10h cover open, 40h media
cannot be fed, 80h system error.
"""

from __future__ import annotations

from enum import IntEnum

from badgeline.emulator.brother_ql.media import SERIES_CODE, Model, Roll
from badgeline.emulator.state import Fault

SIZE = 32


class StatusType(IntEnum):
    REPLY = 0x00
    PRINTING_COMPLETED = 0x01
    ERROR_OCCURRED = 0x02
    PHASE_CHANGE = 0x06


class Phase(IntEnum):
    WAITING_TO_RECEIVE = 0x00
    PRINTING = 0x01


NO_MEDIA = 0x01
END_OF_MEDIA = 0x02
CUTTER_JAM = 0x04
REPLACE_MEDIA = 0x01
COVER_OPEN = 0x10

CONTINUOUS_TAPE = 0x0A
DIE_CUT_LABELS = 0x0B


def error_bits(fault: Fault, roll: Roll) -> tuple[int, int]:
    """Error information 1 and 2 for `fault`."""
    if fault is Fault.PAPER_OUT:
        return (END_OF_MEDIA if roll.die_cut else NO_MEDIA), 0
    if fault is Fault.JAM:
        return CUTTER_JAM, 0
    if fault is Fault.COVER_OPEN:
        return 0, COVER_OPEN
    return 0, 0


def status(
    model: Model,
    roll: Roll,
    kind: StatusType,
    phase: Phase,
    errors: tuple[int, int] = (0, 0),
    mode: int = 0,
) -> bytes:
    reply = bytearray(SIZE)
    reply[0:8] = bytes([0x80, SIZE, 0x42, SERIES_CODE, model.code, 0x30, 0x30, 0x00])
    reply[8], reply[9] = errors
    reply[10] = roll.width_mm
    reply[11] = DIE_CUT_LABELS if roll.die_cut else CONTINUOUS_TAPE
    reply[13], reply[17] = roll.length_mm >> 8, roll.length_mm & 0xFF
    reply[15] = mode
    reply[18], reply[19] = kind, phase
    return bytes(reply)
