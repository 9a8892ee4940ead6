"""The printer status probe: four DLE EOT real-time queries, mapped to a health report.

ESC/POS has no way to confirm that a badge physically came out; the best
evidence is the printer's real-time status. ``DLE EOT n`` (``10 04 n``) is
answered with one byte even while the printer is offline or mid-job. The bit
map below is Epson's (TM-T88 family), which the common clones copy.

Every reply has bits 1 and 4 set and bits 0 and 7 clear, i.e.
``byte & 0x93 == 0x12``; a healthy printer answers 0x12 to all four. A byte
without that pattern is not a status reply (line noise, a printer speaking
another protocol) and is treated like no reply.

====  ==================  ======  =================================================
n     reports             bit     meaning when set
====  ==================  ======  =================================================
1     printer status      3       offline
2     offline cause       2       cover open
                          3       paper being fed by the FEED button
                          5       printing stopped: paper end
                          6       an error occurred (n=3 says which)
3     error cause         2       mechanical error
                          3       auto-cutter error (a paper jam trips it)
                          5       unrecoverable error
                          6       auto-recoverable error (e.g. head too hot)
4     paper roll sensor   2, 3    paper near end (both bits move together)
                          5, 6    paper end (both bits move together)
====  ==================  ======  =================================================

How that becomes a ``PrinterHealthReport``:

- ``reachable`` is True only when all four queries got a well-formed reply.
  No reply, a timeout, a malformed byte or a broken connection give
  ``reachable=False`` with the reason in ``detail``; they never raise, since
  the agent's loops must never die on a printer.
- ``jammed``: auto-cutter error or unrecoverable error (n=3 bit 3 or bit 5):
  both need a person at the printer.
- ``cover_open``: n=2 bit 2.
- ``paper``: OUT on paper end (n=4 bits 5/6) or "stopped: paper end"
  (n=2 bit 5), else LOW on near end (n=4 bits 2/3), else OK.
- ``detail`` lists every condition that is set, e.g. ``"offline; cover open"``.

A link that cannot read status at all (a write-only device node) is reported
reachable, since the node opened, with ``detail`` saying the status is unknown.

A write-only printer (the agent's ``print_confirmation = "sent"``) is asked
nothing: it is reachable while its link stands, or opens again.

A printer busy with the agent's own bytes cannot answer yet (its queries wait
behind them: link.py): it is reported reachable, as it last answered
(`last`), with ``detail`` saying it is busy printing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum
from typing import TYPE_CHECKING

from badgeline.agent.printers.errors import (
    PrinterBusyError,
    PrinterLinkError,
    StatusUnavailableError,
)
from badgeline.agent.printers.foreign import language_hint
from badgeline.protocol.agent_models import PrinterHealthReport
from badgeline.protocol.states import PaperLevel

if TYPE_CHECKING:  # link.py needs this module's status bytes (replies.py): no cycle at run time
    from badgeline.agent.printers.link import PrinterLink

logger = logging.getLogger(__name__)

DLE_EOT = b"\x10\x04"
STATUS_FIXED_MASK = 0x93  # bits 0, 1, 4, 7
STATUS_FIXED_BITS = 0x12  # bits 1 and 4 set, bits 0 and 7 clear
MAX_DETAIL = 200  # PrinterHealthReport.detail's limit
BUSY_DETAIL = "busy printing"
WRITE_ONLY_DETAIL = "write-only printer: its link is up (it reports no status)"


class StatusQuery(IntEnum):
    """The ``n`` of ``DLE EOT n``."""

    PRINTER = 1
    OFFLINE_CAUSE = 2
    ERROR_CAUSE = 3
    PAPER_SENSOR = 4

    @property
    def command(self) -> bytes:
        return DLE_EOT + bytes([self.value])


# n=1
OFFLINE = 0x08
# n=2
COVER_OPEN = 0x04
FEED_BUTTON = 0x08
PAPER_END_STOP = 0x20
ERROR_OCCURRED = 0x40
# n=3
MECHANICAL_ERROR = 0x04
AUTO_CUTTER_ERROR = 0x08
UNRECOVERABLE_ERROR = 0x20
AUTO_RECOVERABLE_ERROR = 0x40
# n=4
PAPER_NEAR_END = 0x0C
PAPER_END = 0x60

_CONDITIONS: tuple[tuple[StatusQuery, int, str], ...] = (
    (StatusQuery.PRINTER, OFFLINE, "offline"),
    (StatusQuery.OFFLINE_CAUSE, COVER_OPEN, "cover open"),
    (StatusQuery.OFFLINE_CAUSE, FEED_BUTTON, "paper fed by FEED button"),
    (StatusQuery.OFFLINE_CAUSE, PAPER_END_STOP, "printing stopped by paper end"),
    (StatusQuery.OFFLINE_CAUSE, ERROR_OCCURRED, "error"),
    (StatusQuery.ERROR_CAUSE, MECHANICAL_ERROR, "mechanical error"),
    (StatusQuery.ERROR_CAUSE, AUTO_CUTTER_ERROR, "auto-cutter error"),
    (StatusQuery.ERROR_CAUSE, UNRECOVERABLE_ERROR, "unrecoverable error"),
    (StatusQuery.ERROR_CAUSE, AUTO_RECOVERABLE_ERROR, "auto-recoverable error"),
    (StatusQuery.PAPER_SENSOR, PAPER_NEAR_END, "paper near end"),
    (StatusQuery.PAPER_SENSOR, PAPER_END, "paper end"),
)


@dataclass(frozen=True)
class StatusBytes:
    """The replies to DLE EOT 1-4; None where no reply came."""

    printer: int | None
    offline_cause: int | None
    error_cause: int | None
    paper_sensor: int | None

    def reply(self, query: StatusQuery) -> int | None:
        return (self.printer, self.offline_cause, self.error_cause, self.paper_sensor)[query - 1]


def is_status_byte(value: int) -> bool:
    return value & STATUS_FIXED_MASK == STATUS_FIXED_BITS


def health_from_status(status: StatusBytes, foreign: str | None = None) -> PrinterHealthReport:
    """Map the four status bytes to a health report. Pure: no I/O, no clock.

    `foreign`: the family whose reply the printer sent instead (foreign.py): then it is
    not reachable as an ESC/POS printer, whatever its bytes looked like."""
    problem = _malformed(status, foreign)
    if problem is not None:
        return PrinterHealthReport(reachable=False, detail=clip(problem))
    offline, error, paper = (
        status.offline_cause or 0,
        status.error_cause or 0,
        status.paper_sensor or 0,
    )
    conditions = [label for query, bits, label in _CONDITIONS if (status.reply(query) or 0) & bits]
    return PrinterHealthReport(
        reachable=True,
        jammed=bool(error & (AUTO_CUTTER_ERROR | UNRECOVERABLE_ERROR)),
        cover_open=bool(offline & COVER_OPEN),
        paper=_paper_level(offline, paper),
        detail=clip("; ".join(conditions)) or None,
    )


def _malformed(status: StatusBytes, foreign: str | None) -> str | None:
    hint = language_hint(foreign, "printer off, hung, or not ESC/POS: check printer.language")
    for query in StatusQuery:
        value = status.reply(query)
        if value is None:
            return f"no reply to DLE EOT {query.value} ({hint})"
        if not is_status_byte(value):
            problem = f"DLE EOT {query.value} reply {value:#04x} is not an ESC/POS status byte"
            return f"{problem} ({hint})" if foreign else problem
    if foreign:
        return f"not an ESC/POS printer ({hint})"
    return None


def _paper_level(offline_cause: int, paper_sensor: int) -> PaperLevel:
    if paper_sensor & PAPER_END or offline_cause & PAPER_END_STOP:
        return PaperLevel.OUT
    if paper_sensor & PAPER_NEAR_END:
        return PaperLevel.LOW
    return PaperLevel.OK


def clip(text: str) -> str:
    return text if len(text) <= MAX_DETAIL else text[: MAX_DETAIL - 1] + "…"


def read_status_bytes(link: PrinterLink) -> StatusBytes:
    """Send DLE EOT 1-4 and collect the replies. Blocking; raises PrinterLinkError.

    Stops at the first query that gets no reply: a silent printer would make
    each remaining query wait out the full timeout, and one silence already
    tells us it is not answering.
    """
    replies: list[int | None] = [None] * len(StatusQuery)
    for index, query in enumerate(StatusQuery):
        reply = link.read_status(query.command)
        if not reply:
            break
        # If a late reply to an earlier query raced in, ours is the newest byte.
        replies[index] = reply[-1]
    return StatusBytes(*replies)


def escpos_health(link: PrinterLink) -> PrinterHealthReport:
    """DLE EOT 1-4 asked and mapped. Blocking; raises PrinterLinkError."""
    status = read_status_bytes(link)
    return health_from_status(status, getattr(link.replies, "foreign", None))


def probe_health(
    link: PrinterLink,
    last: PrinterHealthReport | None = None,
    reader: Callable[[PrinterLink], PrinterHealthReport] = escpos_health,
) -> PrinterHealthReport:
    """Query the printer's status (`reader`: its family's queries). Blocking; never raises.

    `last` is the printer's last real answer: a busy printer keeps what it said
    then (paper low stays low), since it cannot say anything new until it has
    read up to the question.
    """
    try:
        if link.is_busy():
            return busy_report(link, last)
        if link.write_only:
            return _link_health(link)
        link.open()
        if not link.can_read_status:
            return status_unknown(f"{link.description} cannot report status")
        return reader(link)
    except PrinterBusyError:
        return busy_report(link, last)
    except StatusUnavailableError as error:
        return status_unknown(str(error))
    except PrinterLinkError as error:
        return PrinterHealthReport(reachable=False, detail=clip(str(error)))
    except Exception as error:
        # The print and heartbeat loops must never die on a printer: a library
        # fault we did not foresee is reported as an unreachable printer.
        logger.debug("status probe of %s failed", link.description, exc_info=True)
        return PrinterHealthReport(
            reachable=False, detail=clip(f"status probe failed: {type(error).__name__}: {error}")
        )


def _link_health(link: PrinterLink) -> PrinterHealthReport:
    """A write-only printer is asked nothing: reachable while its link stands or reopens."""
    if link.is_open and not link.still_connected():
        link.close()
    link.open()  # raises PrinterLinkError when it is gone: unreachable
    return PrinterHealthReport(reachable=True, detail=WRITE_ONLY_DETAIL)


def busy_report(link: PrinterLink, last: PrinterHealthReport | None) -> PrinterHealthReport:
    """The printer is printing our bytes: reachable, as it last said, and busy."""
    detail = clip(f"{BUSY_DETAIL}: {link.backlog()} bytes still to take")
    if last is None or not last.reachable:
        return PrinterHealthReport(reachable=True, detail=detail)
    return last.model_copy(update={"detail": detail})


def is_busy_report(report: PrinterHealthReport) -> bool:
    return (report.detail or "").startswith(BUSY_DETAIL)


def status_unknown(reason: str) -> PrinterHealthReport:
    return PrinterHealthReport(reachable=True, detail=clip(f"status unknown: {reason}"))
