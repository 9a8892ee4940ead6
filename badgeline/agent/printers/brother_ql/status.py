"""A Brother QL's 32-byte status, read and mapped onto the agent's PrinterHealthReport.

Raster Command Reference (QL-800/810W/820NWB, QL-1100/1110NWB), 4.2 Status
information: `ESC i S` is answered with 32 bytes, and the printer sends the
same frame unasked when a page starts and ends and when an error occurs
(5. Flow Charts). By offset: 0 print head mark 80h, 1 size 20h, 2 "B",
3 series "4", 4 model code, 8 error information 1, 9 error information 2,
10 media width (mm), 11 media type (00h none, 0Ah continuous, 0Bh die-cut),
13 and 17 media length (mm, high and low byte), 18 status type (00h reply,
01h printing completed, 02h error occurred, 06h phase change), 19 phase
(00h waiting to receive, 01h printing).

Error information 1: 01h no media, 02h end of media (die-cut), 04h cutter
jam, 10h printer in use, 20h printer turned off, 80h fan motor error. Error
information 2: 01h replace media (the job's media is not the loaded roll),
02h expansion buffer full, 04h communication error, 08h communication buffer
full, 10h cover open, 40h media cannot be fed, 80h system error.

The mapping: no media or end of media -> paper OUT; a roll other than the
configured one -> paper OUT too (nothing usable is loaded: the badge would
misprint), with `detail` saying what is loaded; cover open -> cover_open; a
cutter jam, media that cannot be fed or a system error -> jammed (each needs a
person); the rest into `detail`.
"""

from __future__ import annotations

from dataclasses import dataclass

from badgeline.agent.printers.brother_ql.media import MODEL_CODES, WIDE, QlMedia
from badgeline.agent.printers.realtime_status import clip
from badgeline.protocol.agent_models import PrinterHealthReport
from badgeline.protocol.states import PaperLevel

SIZE = 32
HEAD = b"\x80\x20\x42"
STATUS_REQUEST = b"\x1biS"
REPLY, PRINTING_COMPLETED, ERROR_OCCURRED, PHASE_CHANGE = 0x00, 0x01, 0x02, 0x06
NO_MEDIA, END_OF_MEDIA, CUTTER_JAM = 0x01, 0x02, 0x04
REPLACE_MEDIA, COVER_OPEN, FEED_ERROR, SYSTEM_ERROR = 0x01, 0x10, 0x40, 0x80
MEDIA_TYPES = {0x0A: "continuous", 0x0B: "die-cut"}
_ERRORS_1 = (
    (NO_MEDIA, "no media"),
    (END_OF_MEDIA, "end of media"),
    (CUTTER_JAM, "cutter jam"),
    (0x10, "printer in use"),
    (0x20, "printer turned off"),
    (0x80, "fan motor error"),
)
_ERRORS_2 = ((REPLACE_MEDIA, "replace media"), (0x02, "expansion buffer full"),
             (0x04, "communication error"), (0x08, "communication buffer full"),
             (COVER_OPEN, "cover open"), (FEED_ERROR, "media cannot be fed"),
             (SYSTEM_ERROR, "system error"))  # fmt: skip
_CODE_MODELS = {code: name for name, code in MODEL_CODES.items()}


@dataclass(frozen=True)
class QlStatus:
    model_code: int
    errors_1: int
    errors_2: int
    media_width_mm: int
    media_type: int
    media_length_mm: int
    status_type: int
    phase: int

    @property
    def errors(self) -> bool:
        return bool(self.errors_1 or self.errors_2)

    @property
    def media(self) -> str:
        kind = MEDIA_TYPES.get(self.media_type)
        if kind is None:
            return "no media"
        if kind == "die-cut":
            return f"{self.media_width_mm}x{self.media_length_mm} mm die-cut"
        return f"{self.media_width_mm} mm continuous"


def parse_status(frame: bytes) -> QlStatus:
    """One 32-byte frame; ValueError when it is not a QL status."""
    if len(frame) != SIZE or frame[:3] != HEAD:
        raise ValueError("not a Brother QL status (32 bytes from 80h 20h 'B')")
    return QlStatus(
        model_code=frame[4], errors_1=frame[8], errors_2=frame[9], media_width_mm=frame[10],
        media_type=frame[11], media_length_mm=frame[13] << 8 | frame[17],
        status_type=frame[18], phase=frame[19],
    )  # fmt: skip


def media_mismatch(status: QlStatus, media: QlMedia) -> str | None:
    """Why the loaded roll (or printer) is not the configured one; None when it is."""
    roll = media.roll
    model = _CODE_MODELS.get(status.model_code)
    if model is not None and (model in WIDE) != (media.model in WIDE):
        return f"the printer is a {model}, printer.model is {media.model} (another head width)"
    if status.media_type not in MEDIA_TYPES:
        return None  # no roll at all: "no media" says it
    loaded = (status.media_width_mm, status.media_length_mm if status.media_type == 0x0B else 0)
    if loaded != (roll.width_mm, roll.length_mm):
        return f"media: {status.media} is loaded, printer.media is {roll.name}"
    return None


def health_from_status(status: QlStatus, media: QlMedia) -> PrinterHealthReport:
    conditions = [label for bit, label in _ERRORS_1 if status.errors_1 & bit]
    conditions += [label for bit, label in _ERRORS_2 if status.errors_2 & bit]
    mismatch = media_mismatch(status, media)
    if mismatch is not None:
        conditions.append(mismatch)
    out = status.errors_1 & (NO_MEDIA | END_OF_MEDIA) or mismatch is not None
    return PrinterHealthReport(
        reachable=True,
        jammed=bool(status.errors_1 & CUTTER_JAM or status.errors_2 & (FEED_ERROR | SYSTEM_ERROR)),
        cover_open=bool(status.errors_2 & COVER_OPEN),
        paper=PaperLevel.OUT if out or status.errors_2 & REPLACE_MEDIA else PaperLevel.OK,
        detail=clip("; ".join(conditions)) or None,
    )
