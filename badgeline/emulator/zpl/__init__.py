"""Zebra ZPL II as an emulator language (ZD421, ZD621, ZD411 desktop label printers).

Modelled on Zebra's ZPL II Programming Guide: decoding in tokens.py,
decoder.py, graphics.py and layout.py; the `~HS` and `~HQES` answers in
status.py. A Zebra keeps its formats through a paper out, ribbon out, head
open, cutter fault or pause and prints them once it clears; a label the
error interrupted is printed again (`^JZ`, Reprint After Error, default Y).
Only switching it off (offline) loses the buffer. It sends nothing unasked:
the host learns a label is out from `~HS` (status.py).
"""

from __future__ import annotations

from badgeline.emulator.language import Decoder, HeadView, Language, PageWatcher, Query, Reply
from badgeline.emulator.media import Media
from badgeline.emulator.state import Fault, PrinterCondition
from badgeline.emulator.zpl import status
from badgeline.emulator.zpl.decoder import HostQuery, HostStatusRequest, ZplDecoder

__all__ = ["MODELS", "HostQuery", "HostStatusRequest", "ZplDecoder", "ZplFamily"]

MODELS = ("ZD421", "ZD621", "ZD411")
# Print head width in mm: 104 mm for the 4-inch models, 56 mm for the ZD411.
_HEAD_MM = {"ZD421": 104, "ZD621": 104, "ZD411": 56}
DOTS_PER_MM = {203: 8, 300: 12}
# A badge label: 4 x 3 in on the 4-inch models, 2 x 1 in on the ZD411.
_DEFAULT_INCHES = {"ZD421": (4, 3), "ZD621": (4, 3), "ZD411": (2, 1)}


class ZplFamily:
    language = Language.ZPL
    faults = frozenset(Fault)
    holds = frozenset(Fault) - {Fault.NONE, Fault.PAPER_LOW, Fault.OFFLINE}

    def __init__(self, model: str = MODELS[0]) -> None:
        self.model = model

    def head_dots(self, dpi: int) -> int:
        return _HEAD_MM[self.model] * DOTS_PER_MM[dpi]

    def default_media(self, dpi: int | None = None) -> Media:
        dpi = dpi or 203
        if dpi not in DOTS_PER_MM:
            raise ValueError(f"a {self.model} prints at 203 or 300 dpi, not {dpi}")
        across, along = _DEFAULT_INCHES[self.model]
        return Media(dpi=dpi, width_dots=across * dpi, length_dots=along * dpi)

    def check_media(self, media: Media) -> Media:
        if media.dpi not in DOTS_PER_MM:
            raise ValueError(f"a {self.model} prints at 203 or 300 dpi, not {media.dpi}")
        head = self.head_dots(media.dpi)
        if media.width_dots > head:
            raise ValueError(f"width_dots is at most the {head}-dot head at {media.dpi} dpi")
        if media.length_dots > 9999:
            raise ValueError("length_dots is at most 9999 (what ~HS can report)")
        return media

    def decoder(self, condition: PrinterCondition) -> Decoder:
        return ZplDecoder(condition)

    def answer(
        self, query: Query, condition: PrinterCondition, head: HeadView, decoder: Decoder
    ) -> bytes | None:
        if condition.fault in status.SILENT or not isinstance(decoder, ZplDecoder):
            return None
        if isinstance(query, HostStatusRequest):
            partial = decoder.has_pending_content
            return status.host_status(condition, head, decoder.settings, partial)
        if isinstance(query, HostQuery) and query.query == "ES":
            return status.printer_status(condition)
        return None

    def watcher(
        self, reply: Reply, decoder: Decoder, condition: PrinterCondition
    ) -> PageWatcher | None:
        return None
