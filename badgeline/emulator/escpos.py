"""Epson ESC/POS as an emulator language: the decoder, DLE EOT, and what it can have.

The decoding is decoder.py (with symbols.py and stream.py), the status
bytes state.py; this module is what the shared port and head ask of the
language (language.py). A receipt printer confirms with `GS ( H`, which
the port answers through the head, so it sends nothing by itself.
"""

from __future__ import annotations

from badgeline.emulator.decoder import EscPosDecoder, StatusRequest
from badgeline.emulator.language import (
    Decoder,
    HeadView,
    Language,
    PageWatcher,
    Query,
    Reply,
)
from badgeline.emulator.media import Media
from badgeline.emulator.state import ESCPOS_HOLDS, Fault, PrinterCondition

# 80 mm paper at 203 dpi (render.py draws pages this wide); 58 mm paper is 384 dots.
PAPER_WIDTHS_DOTS = (576, 384)


class EscPosFamily:
    language = Language.ESCPOS
    model = "ESC/POS receipt printer"
    faults = frozenset(Fault) - {Fault.RIBBON_OUT, Fault.PAUSED}
    holds = ESCPOS_HOLDS

    def default_media(self, dpi: int | None = None) -> Media:
        return self.check_media(Media(dpi=dpi or 203, width_dots=PAPER_WIDTHS_DOTS[0]))

    def check_media(self, media: Media) -> Media:
        if media.dpi != 203:
            raise ValueError("an ESC/POS receipt printer here prints at 203 dpi")
        if media.width_dots not in PAPER_WIDTHS_DOTS:
            raise ValueError("width_dots must be 576 (80 mm paper) or 384 (58 mm)")
        if media.length_dots != 0:
            raise ValueError("a receipt roll is continuous: length_dots must be 0")
        return media

    def decoder(self, condition: PrinterCondition) -> Decoder:
        return EscPosDecoder()

    def answer(
        self, query: Query, condition: PrinterCondition, head: HeadView, decoder: Decoder
    ) -> bytes | None:
        if isinstance(query, StatusRequest):
            return condition.status_reply(query.query)
        return None

    def watcher(
        self, reply: Reply, decoder: Decoder, condition: PrinterCondition
    ) -> PageWatcher | None:
        return None
