"""What a Zebra answers to `~HS` and `~HQES`, field by field as the ZPL II Programming
Guide lays them out.

`~HS` Host Status Return: three strings, each `<STX>…<ETX><CR><LF>`.

    string 1  aaa,b,c,dddd,eee,f,g,h,iii,j,k,l
      aaa   communication settings: 030 (9600 baud, 8 data bits, 1 stop
            bit, no parity, Xon/Xoff: the serial port's factory settings)
      b     paper out flag          c  pause flag
      dddd  label length in dots    eee  formats in the receive buffer
      f     buffer full flag        g  communications diagnostic mode (0)
      h     partial format flag     iii  unused, 000
      j     corrupt RAM (0)         k, l  under and over temperature (0)
    string 2  mmm,n,o,p,q,r,s,t,uuuuuuuu,v,www
      mmm   function settings: bit 7 continuous media, bit 0 thermal transfer
      n     unused (0)              o  head up flag (the head is open)
      p     ribbon out flag         q  thermal transfer mode flag
      r     print mode (^MM: 0 rewind, 1 peel-off, 2 tear-off, 3 cutter,
            4 applicator, 5 delayed cut, 9 RFID, K kiosk)
      s     print width mode (0)    t  label waiting (peel-off; 0)
      uuuuuuuu  labels remaining in the batch
      v     format while printing (always 1)    www  graphics stored (000)
    string 3  xxxx,y   password (the factory 1234), static RAM installed (0)

The printer answers `~HS` as soon as it reads it: a format still waiting
counts in eee, a label of the batch on the head in uuuuuuuu. Both 0, with
the partial format flag 0, say every label received before the `~HS` is
out: a Zebra's print confirmation. (The current guide adds that a printer
in media out, ribbon out or head open does not answer `~HS`; the emulator
answers with the flags set, as the strings define them, and `~HQES`
reports the same conditions.)

`~HQES` Host Query, printer status: `ERRORS:` and `WARNINGS:`, each a flag
(1: any set) and two groups of eight hex digits, the second the first
group of bits. Errors: media out 00000001, ribbon out 00000002, head open
00000004, cutter fault 00000008, paused 00010000. Warnings: paper near end
00000008.
"""

from __future__ import annotations

from badgeline.emulator.language import HeadView
from badgeline.emulator.state import Fault, PrinterCondition
from badgeline.emulator.zpl.decoder import PRINT_MODES, Settings

STX, ETX, CRLF = "\x02", "\x03", "\r\n"
COMMUNICATION_SETTINGS = "030"
PASSWORD = "1234"

ERROR_BITS = {
    Fault.PAPER_OUT: 0x00000001,
    Fault.RIBBON_OUT: 0x00000002,
    Fault.COVER_OPEN: 0x00000004,
    Fault.JAM: 0x00000008,
    Fault.PAUSED: 0x00010000,
}
WARNING_BITS = {Fault.PAPER_LOW: 0x00000008}
SILENT = frozenset({Fault.OFFLINE, Fault.FROZEN})


def host_status(
    condition: PrinterCondition, head: HeadView, settings: Settings, partial_format: bool
) -> bytes:
    fault = condition.fault
    length = condition.media.length_dots if settings.label_length is None else (
        settings.label_length
    )  # fmt: skip
    first = ",".join([
        COMMUNICATION_SETTINGS, _flag(fault is Fault.PAPER_OUT), _flag(fault is Fault.PAUSED),
        f"{min(length, 9999):04d}", f"{min(head.formats_waiting, 999):03d}",
        _flag(head.buffer_full), "0", _flag(partial_format), "000", "0", "0", "0",
    ])  # fmt: skip
    functions = (0x80 if condition.media.continuous else 0) | int(settings.thermal_transfer)
    second = ",".join([
        f"{functions:03d}", "0", _flag(fault is Fault.COVER_OPEN),
        _flag(fault is Fault.RIBBON_OUT), _flag(settings.thermal_transfer),
        PRINT_MODES[settings.print_mode], "0", "0",
        f"{min(head.labels_remaining, 99_999_999):08d}", "1", "000",
    ])  # fmt: skip
    third = f"{PASSWORD},0"
    return "".join(STX + text + ETX + CRLF for text in (first, second, third)).encode("ascii")


def printer_status(condition: PrinterCondition) -> bytes:
    """`~HQES`."""
    errors = ERROR_BITS.get(condition.fault, 0)
    warnings = WARNING_BITS.get(condition.fault, 0)
    lines = [
        "",
        "  PRINTER STATUS",
        f"   ERRORS:         {int(bool(errors))} 00000000 {errors:08X}",
        f"   WARNINGS:       {int(bool(warnings))} 00000000 {warnings:08X}",
    ]
    return (STX + CRLF.join(lines) + CRLF + ETX + CRLF).encode("ascii")


def _flag(value: bool) -> str:
    return "1" if value else "0"
