"""Simulated printer condition, shared by every language, and the DLE EOT status bytes
a real Epson printer sends for it (the ZPL and Brother QL replies are in zpl/status.py
and brother_ql/status.py).

Every DLE EOT n reply is one byte. Bits 1 and 4 are always 1 and bit 7 is
always 0, so a healthy printer answers 0x12 to every n. The bits that carry
news, per Epson's ESC/POS reference (TM-T88 family):

    n=1 printer status     bit 3  offline
    n=2 offline cause      bit 2  cover open
                           bit 5  printing stopped by paper end
                           bit 6  error occurred
    n=3 error cause        bit 3  auto-cutter error (what a paper jam trips)
                           bit 5  unrecoverable error
                           bit 6  auto-recoverable error
    n=4 paper roll sensor  bits 2+3  paper near end
                           bits 5+6  paper end

What each fault answers (n=1 / n=2 / n=3 / n=4):

    none        0x12 / 0x12 / 0x12 / 0x12
    paper_low   0x12 / 0x12 / 0x12 / 0x1E   still online and printing
    jam         0x1A / 0x52 / 0x1A / 0x12   cutter error takes it offline
    cover_open  0x1A / 0x16 / 0x12 / 0x12
    paper_out   0x1A / 0x32 / 0x12 / 0x7E   the near-end sensor sits before
                                            the end sensor, so both report
    offline     no answer at all: a printer that is switched off or hung
    ribbon_out, paused  not ESC/POS faults: a thermal receipt printer has no
                ribbon and no pause key (label printers only, language.py)
    frozen      no answer and nothing read or printed, the buffer kept: a
                printer that hung mid-badge, or whose cable is out. TCP
                holds the sender's bytes; it all goes on when it thaws

python-escpos reads n=4 with masks 0x72 (end), 0x1E (near end), 0x12 (ok),
checked in that order, and n=1 with mask 0x08; these bytes satisfy both.
"""

from __future__ import annotations

from enum import StrEnum

from badgeline.emulator.media import Media

STATUS_BASE = 0x12  # bits 1 and 4 fixed to 1, bit 7 fixed to 0

PRINTER_STATUS = 1
OFFLINE_CAUSE = 2
ERROR_CAUSE = 3
PAPER_SENSOR = 4
STATUS_QUERIES = (PRINTER_STATUS, OFFLINE_CAUSE, ERROR_CAUSE, PAPER_SENSOR)

OFFLINE_BIT = 0x08
COVER_OPEN_BIT = 0x04
PAPER_END_STOP_BIT = 0x20
ERROR_OCCURRED_BIT = 0x40
AUTO_CUTTER_ERROR_BIT = 0x08
PAPER_NEAR_END_BITS = 0x0C
PAPER_END_BITS = 0x60


class Fault(StrEnum):
    NONE = "none"
    JAM = "jam"
    COVER_OPEN = "cover_open"
    PAPER_OUT = "paper_out"
    PAPER_LOW = "paper_low"
    OFFLINE = "offline"
    FROZEN = "frozen"
    RIBBON_OUT = "ribbon_out"
    PAUSED = "paused"


# Faults under which the printer keeps printing: near-end still leaves paper.
PRINTING_FAULTS = frozenset({Fault.NONE, Fault.PAPER_LOW})

_STATUS_BITS: dict[Fault, dict[int, int]] = {
    Fault.NONE: {},
    Fault.PAPER_LOW: {PAPER_SENSOR: PAPER_NEAR_END_BITS},
    Fault.JAM: {
        PRINTER_STATUS: OFFLINE_BIT,
        OFFLINE_CAUSE: ERROR_OCCURRED_BIT,
        ERROR_CAUSE: AUTO_CUTTER_ERROR_BIT,
    },
    Fault.COVER_OPEN: {PRINTER_STATUS: OFFLINE_BIT, OFFLINE_CAUSE: COVER_OPEN_BIT},
    Fault.PAPER_OUT: {
        PRINTER_STATUS: OFFLINE_BIT,
        OFFLINE_CAUSE: PAPER_END_STOP_BIT,
        PAPER_SENSOR: PAPER_NEAR_END_BITS | PAPER_END_BITS,
    },
}


def can_print(fault: Fault) -> bool:
    return fault in PRINTING_FAULTS


def status_reply(fault: Fault, query: int) -> bytes | None:
    """The byte answering `DLE EOT query`, or None when the printer stays silent."""
    if fault in (Fault.OFFLINE, Fault.FROZEN) or query not in STATUS_QUERIES:
        return None
    return bytes([STATUS_BASE | _STATUS_BITS.get(fault, {}).get(query, 0)])


# An Epson printer keeps its buffer only while hung (frozen); every other fault clears it.
ESCPOS_HOLDS = frozenset({Fault.FROZEN})


class PrinterCondition:
    """What the control API can change: the current fault, the print speed, the media.

    `holds` are the faults under which this printer keeps what it has received
    and prints it once the fault clears (the language decides: a Zebra keeps
    its formats through a paper out, an Epson or a Brother clears its buffer).
    """

    MAX_MS_PER_BADGE = 600_000

    def __init__(
        self,
        fault: Fault = Fault.NONE,
        ms_per_badge: int = 0,
        *,
        holds: frozenset[Fault] = ESCPOS_HOLDS,
        media: Media | None = None,
    ) -> None:
        self.holds = holds | {Fault.FROZEN}
        self.fault = fault
        self.ms_per_badge = ms_per_badge
        self.media = media or Media(dpi=203, width_dots=576, length_dots=0)

    @property
    def fault(self) -> Fault:
        return self._fault

    @fault.setter
    def fault(self, value: Fault) -> None:
        self._fault = Fault(value)

    @property
    def ms_per_badge(self) -> int:
        return self._ms_per_badge

    @ms_per_badge.setter
    def ms_per_badge(self, value: int) -> None:
        if not 0 <= value <= self.MAX_MS_PER_BADGE:
            raise ValueError(f"ms_per_badge must be within 0..{self.MAX_MS_PER_BADGE}")
        self._ms_per_badge = value

    @property
    def can_print(self) -> bool:
        return can_print(self._fault)

    @property
    def frozen(self) -> bool:
        """Hung: nothing read, printed or answered, and nothing lost (see Fault.FROZEN)."""
        return self._fault is Fault.FROZEN

    @property
    def held(self) -> bool:
        """Stopped with everything kept: frozen, or a fault this printer holds its buffer
        through. Nothing prints until it clears."""
        return self._fault in self.holds

    @property
    def keeps_data(self) -> bool:
        """What arrives now is kept (printed now or once the fault clears)."""
        return self.can_print or self.held

    @property
    def clears_buffer(self) -> bool:
        """A fault that stops printing and empties the buffer (for ESC/POS every one but
        frozen)."""
        return not self.can_print and not self.held

    def status_reply(self, query: int) -> bytes | None:
        return status_reply(self._fault, query)
