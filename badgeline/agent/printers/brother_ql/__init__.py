"""Brother QL raster as a printer family: QL-820NWB, QL-1110NWB and their series.

Modelled on Brother's "Software Developer's Manual, Raster Command Reference"
for the QL-800/810W/820NWB and the QL-1100/1110NWB: the raster job in
encoder.py, the 32-byte status in status.py and replies.py, the print
confirmation in confirmation.py, the models and DK rolls in media.py.

Not brother-ql-next (PyPI), though it builds the same raster: its package
imports Pillow, attrs and packbits with its label tables (about 2.3 MB in a
process that has Pillow, more in the agent's, which must not load Pillow at
all: the idle agent has 1.3 MB left of its 45 MB budget), and its convert()
puts an `ESC i S` status request inside every job, whose answer the
confirmation would have to tell from the printer's own notices. The raster
protocol is a few commands; the tests check this encoder against
brother-ql-next's own reader.
"""

from __future__ import annotations

from typing import Any

from badgeline.agent.printers.brother_ql.confirmation import poll_page_printed
from badgeline.agent.printers.brother_ql.encoder import raster_job
from badgeline.agent.printers.brother_ql.media import QlMedia, ql_media
from badgeline.agent.printers.brother_ql.replies import QlReplies
from badgeline.agent.printers.brother_ql.status import (
    SIZE,
    STATUS_REQUEST,
    health_from_status,
    parse_status,
)
from badgeline.agent.printers.completion import Completion
from badgeline.agent.printers.family import PrinterFamily
from badgeline.agent.printers.link import LinkIo, PrinterLink
from badgeline.agent.printers.realtime_status import clip
from badgeline.agent.printers.replies import Replies
from badgeline.badge.layout import LabelLayout
from badgeline.protocol.agent_models import PrinterHealthReport
from badgeline.protocol.states import Confirmation, PrinterLanguage

__all__ = ["BrotherQlFamily", "QlMedia"]

# The footer band: 3 mm, 36 dots at 300 dpi.
FOOTER_DOTS = 36


class BrotherQlFamily(PrinterFamily):
    language = PrinterLanguage.BROTHER_QL
    own_confirmation = Confirmation.PRINT_COMPLETED
    probe_steps = 2  # open, a status answer
    reply_chunk = 64  # a 32-byte status arrives as one USB packet

    def __init__(self, media: QlMedia, *, cut: bool = True) -> None:
        self.media = media
        self.cut = cut

    @classmethod
    def configured(cls, *, model: str | None, media: str | None = None,
                   cut: bool | None = None, **_: Any) -> BrotherQlFamily:  # fmt: skip
        return cls(ql_media(model, media), cut=True if cut is None else cut)

    @property
    def model(self) -> str:
        return self.media.model

    def describe(self) -> str:
        return f"{self.media.model} DK {self.media.roll.name} mm"

    def new_replies(self) -> Replies:
        return QlReplies()

    def read_health(self, link: PrinterLink) -> PrinterHealthReport:
        reply = link.read_status(STATUS_REQUEST)
        if reply and len(reply) >= SIZE:
            return health_from_status(parse_status(reply[-SIZE:]), self.media)
        foreign = getattr(link.replies, "foreign", None)
        hint = (
            f'it answered as a {foreign} printer: set printer.language = "{foreign}"'
            if foreign
            else "printer off, or not a Brother QL: check printer.language"
        )
        return PrinterHealthReport(reachable=False, detail=clip(f"no answer to ESC i S ({hint})"))

    def layout(self, footer: bool) -> LabelLayout:
        roll = self.media.roll
        return LabelLayout(roll.width_dots, roll.length_dots if roll.die_cut else None,
                           FOOTER_DOTS if footer else 0, draw_footer=True)  # fmt: skip

    def encode(self, packed: bytes, size: tuple[int, int], footer: str | None) -> bytes:
        return raster_job(packed, size, self.media, cut=self.cut)

    def mark(self, replies: Replies) -> tuple[int, int]:
        assert isinstance(replies, QlReplies)
        return replies.mark()

    def poll(self, io: LinkIo, mark: Any, pause_s: float) -> Completion | None:
        return poll_page_printed(io, mark, pause_s)
