"""A Zebra's status answers, read and mapped onto the agent's PrinterHealthReport.

ZPL II Programming Guide:

`~HS` Host Status Return: three strings, each `<STX>…<ETX><CR><LF>`.

    string 1  aaa,b,c,dddd,eee,f,g,h,iii,j,k,l
              b paper out, c pause, dddd label length (dots), eee formats in
              the receive buffer, f buffer full, g diagnostic mode, h partial
              format in progress, j corrupt RAM, k under / l over temperature
    string 2  mmm,n,o,p,q,r,s,t,uuuuuuuu,v,www
              o head up (open), p ribbon out, q thermal transfer mode,
              r print mode, uuuuuuuu labels remaining in batch
    string 3  xxxx,y  password, static RAM installed

The current guide adds that a printer in media out, ribbon out, head open,
rewinder full or head over-temperature sends no answer to `~HS`; so a
silent `~HS` is followed by `~HQES`.

`~HQES` Host Query, printer status: `ERRORS: f gggggggg hhhhhhhh` and
`WARNINGS: …`, a flag (1: any set) and two groups of eight hex digits; the
second is group 1. Error bits: media out 1, ribbon out 2, head open 4,
cutter fault 8, printhead over temperature 10, motor over temperature 20,
bad printhead element 40, printhead detection error 80, paused 10000.
Warning bits: need to calibrate media 1, clean printhead 2, replace
printhead 4, paper near end 8.

The mapping: paper out or media out -> paper OUT; paper near end -> LOW;
head up -> cover_open; ribbon out -> ribbon_pct 0; pause -> paused; a cutter
fault -> jammed; the other conditions go into `detail`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from badgeline.agent.printers.realtime_status import clip
from badgeline.protocol.agent_models import PrinterHealthReport
from badgeline.protocol.states import PaperLevel

STX, ETX = 0x02, 0x03
HOST_STATUS = b"~HS"
PRINTER_STATUS = b"~HQES"

MEDIA_OUT, RIBBON_OUT, HEAD_OPEN, CUTTER_FAULT = 0x1, 0x2, 0x4, 0x8
PAUSED = 0x10000
PAPER_NEAR_END = 0x8
_ERRORS = ((0x10, "printhead over temperature"), (0x20, "motor over temperature"),
           (0x40, "bad printhead element"), (0x80, "printhead detection error"))  # fmt: skip
_WARNINGS = ((0x1, "needs media calibration"), (0x2, "clean the printhead"),
             (0x4, "replace the printhead"))  # fmt: skip
_FLAGS = re.compile(rb"(ERRORS|WARNINGS):\s*([01])\s+([0-9A-Fa-f]{8})\s+([0-9A-Fa-f]{8})")


@dataclass(frozen=True)
class HostStatus:
    """`~HS`, field by field (the ones the agent reads)."""

    paper_out: bool
    paused: bool
    label_length_dots: int
    formats_waiting: int
    buffer_full: bool
    partial_format: bool
    under_temperature: bool
    over_temperature: bool
    head_up: bool
    ribbon_out: bool
    labels_remaining: int

    @property
    def faulted(self) -> bool:
        """A condition that stops printing (the printer holds its labels meanwhile)."""
        return self.paper_out or self.paused or self.head_up or self.ribbon_out

    @property
    def idle(self) -> bool:
        """Nothing left to print: no format waiting, none half received, no label of
        the batch left, and nothing that holds a label back."""
        busy = self.formats_waiting or self.partial_format or self.labels_remaining
        return not busy and not self.faulted


@dataclass(frozen=True)
class PrinterStatus:
    """`~HQES`: its error and warning bits (group 1)."""

    errors: int
    warnings: int


def frames(data: bytes) -> tuple[list[bytes], bytes]:
    """The complete `<STX>…<ETX>` frames in `data`, and what follows the last (incomplete)."""
    found: list[bytes] = []
    rest = data
    while (start := rest.find(STX)) >= 0:
        end = rest.find(ETX, start + 1)
        if end < 0:
            return found, rest[start:]
        found.append(rest[start + 1 : end])
        rest = rest[end + 1 :]
    return found, b""


def parse_host_status(first: bytes, second: bytes) -> HostStatus:
    """Strings 1 and 2 of a `~HS` answer; ValueError when they are not."""
    one, two = first.split(b","), second.split(b",")
    if len(one) != 12 or len(two) != 11:
        raise ValueError("not the ~HS strings 1 and 2 (12 and 11 fields)")
    flag = _flag
    return HostStatus(
        paper_out=flag(one[1]), paused=flag(one[2]), label_length_dots=int(one[3]),
        formats_waiting=int(one[4]), buffer_full=flag(one[5]), partial_format=flag(one[7]),
        under_temperature=flag(one[10]), over_temperature=flag(one[11]),
        head_up=flag(two[2]), ribbon_out=flag(two[3]), labels_remaining=int(two[8]),
    )  # fmt: skip


def parse_printer_status(frame: bytes) -> PrinterStatus:
    """A `~HQES` answer; ValueError when it is not one."""
    found = {match[1]: int(match[4], 16) for match in _FLAGS.finditer(frame)}
    if b"ERRORS" not in found:
        raise ValueError("not a ~HQES answer (no ERRORS line)")
    return PrinterStatus(errors=found[b"ERRORS"], warnings=found.get(b"WARNINGS", 0))


def _flag(field: bytes) -> bool:
    if field.strip() not in (b"0", b"1"):
        raise ValueError(f"{field!r} is not a ~HS flag")
    return field.strip() == b"1"


def health_from_host_status(status: HostStatus, expected_length: int | None) -> PrinterHealthReport:
    """`~HS` as a health report; `expected_length`: the configured label length, which
    labels shorter than it cannot hold (the badge would run onto the next label)."""
    conditions = [label for on, label in (
        (status.paper_out, "paper out"), (status.paused, "paused"),
        (status.head_up, "head open"), (status.ribbon_out, "ribbon out"),
        (status.buffer_full, "receive buffer full"),
        (status.under_temperature, "under temperature"),
        (status.over_temperature, "over temperature"),
    ) if on]  # fmt: skip
    short = expected_length is not None and status.label_length_dots < expected_length
    if short:
        conditions.append(
            f"media: the printer's labels are {status.label_length_dots} dots long,"
            f" shorter than printer.label_length_dots = {expected_length}"
        )
    return PrinterHealthReport(
        reachable=True,
        cover_open=status.head_up,
        paper=PaperLevel.OUT if status.paper_out or short else PaperLevel.OK,
        ribbon_pct=0 if status.ribbon_out else None,
        paused=status.paused,
        detail=clip("; ".join(conditions)) or None,
    )


def health_from_printer_status(status: PrinterStatus) -> PrinterHealthReport:
    """`~HQES` as a health report (asked when `~HS` was not answered)."""
    errors, warnings = status.errors, status.warnings
    conditions = [label for bit, label in (
        (MEDIA_OUT, "media out"), (RIBBON_OUT, "ribbon out"), (HEAD_OPEN, "head open"),
        (CUTTER_FAULT, "cutter fault"), (PAUSED, "paused"), *_ERRORS,
    ) if errors & bit]  # fmt: skip
    conditions += [label for bit, label in (*_WARNINGS, (PAPER_NEAR_END, "paper near end"))
                   if warnings & bit]  # fmt: skip
    paper = PaperLevel.OK
    if errors & MEDIA_OUT:
        paper = PaperLevel.OUT
    elif warnings & PAPER_NEAR_END:
        paper = PaperLevel.LOW
    return PrinterHealthReport(
        reachable=True,
        jammed=bool(errors & CUTTER_FAULT),
        cover_open=bool(errors & HEAD_OPEN),
        paper=paper,
        ribbon_pct=0 if errors & RIBBON_OUT else None,
        paused=bool(errors & PAUSED),
        detail=clip("; ".join(conditions)) or None,
    )
