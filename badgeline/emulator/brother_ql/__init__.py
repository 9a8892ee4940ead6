"""Brother QL raster as an emulator language (QL-820NWB, QL-1110NWB and their series).

Modelled on Brother's "Software Developer's Manual, Raster Command
Reference" for the QL-800/810W/820NWB and the QL-1100/1110NWB: decoding in
decoder.py, the rolls and models in media.py, the 32-byte status in
status.py.

A QL tells its host how a page goes, unasked (5. Flow Charts, 5.1 Normal
flow): "phase change: printing" when it starts on a page, "printing
completed" when the page is printed, then "phase change: waiting to
receive". "Printing completed" is a Brother's print confirmation. When an
error occurs it sends "error occurred", and "if an error occurs, all data
read from the computer is cleared" (5.2 Error flow): so every fault but
frozen clears the buffer, as on an Epson. The reference's network flow (5.9)
draws no status at all; a QL behind a print server that passes none is
`--write-only`. The QL has no pause key, no ribbon and no near-end sensor
(paper_low prints on and reports nothing).
"""

from __future__ import annotations

from badgeline.emulator.brother_ql.decoder import BrotherQlDecoder, StatusInformationRequest
from badgeline.emulator.brother_ql.media import DEFAULT_ROLL, DPI, MODELS, Model, roll_for
from badgeline.emulator.brother_ql.status import Phase, StatusType, error_bits, status
from badgeline.emulator.label import Label
from badgeline.emulator.language import (
    Decoder,
    HeadView,
    Language,
    PageWatcher,
    Query,
    Reply,
    Sheet,
)
from badgeline.emulator.media import Media
from badgeline.emulator.state import ESCPOS_HOLDS, Fault, PrinterCondition

__all__ = ["MODELS", "BrotherQlDecoder", "BrotherQlFamily", "StatusInformationRequest"]

SILENT = frozenset({Fault.OFFLINE, Fault.FROZEN})


class BrotherQlFamily:
    language = Language.BROTHER_QL
    faults = frozenset(Fault) - {Fault.RIBBON_OUT, Fault.PAUSED}
    holds = ESCPOS_HOLDS

    def __init__(self, model: str = "QL-820NWB") -> None:
        self.printer: Model = MODELS[model]
        self.model = model

    def default_media(self, dpi: int | None = None) -> Media:
        return self.check_media(Media(dpi or DPI, DEFAULT_ROLL.width_dots, 0))

    def check_media(self, media: Media) -> Media:
        roll_for(self.printer, media)
        return media

    def decoder(self, condition: PrinterCondition) -> Decoder:
        return BrotherQlDecoder(self.printer, condition)

    def answer(
        self, query: Query, condition: PrinterCondition, head: HeadView, decoder: Decoder
    ) -> bytes | None:
        if condition.fault in SILENT or not isinstance(query, StatusInformationRequest):
            return None
        assert isinstance(decoder, BrotherQlDecoder)
        roll = decoder.loaded_roll()
        phase = Phase.PRINTING if head.printing else Phase.WAITING_TO_RECEIVE
        errors = error_bits(condition.fault, roll)
        return status(self.printer, roll, StatusType.REPLY, phase, errors, decoder.various_mode)

    def watcher(
        self, reply: Reply, decoder: Decoder, condition: PrinterCondition
    ) -> PageWatcher | None:
        assert isinstance(decoder, BrotherQlDecoder)
        return _StatusNotices(self.printer, reply, decoder, condition)


class _StatusNotices:
    """The statuses a QL sends by itself for the pages of one connection (5.1, 5.2)."""

    def __init__(
        self, model: Model, reply: Reply, decoder: BrotherQlDecoder, condition: PrinterCondition
    ) -> None:
        self._model = model
        self._reply = reply
        self._decoder = decoder
        self._condition = condition
        # One "error occurred" per fault, however many pages it clears.
        self._error_reported: Fault | None = None

    def started(self, page: Sheet) -> None:
        self._error_reported = None
        self._send(StatusType.PHASE_CHANGE, Phase.PRINTING)

    def printed(self, page: Sheet) -> None:
        self._send(StatusType.PRINTING_COMPLETED, Phase.PRINTING)
        self._send(StatusType.PHASE_CHANGE, Phase.WAITING_TO_RECEIVE)

    def lost(self, page: Sheet) -> None:
        fault = self._condition.fault
        rejected = isinstance(page, Label) and page.rejection is not None
        if not rejected and self._error_reported is fault:
            return
        self._error_reported = None if rejected else fault
        first, second = error_bits(fault, self._decoder.loaded_roll())
        if rejected:
            second |= 0x01  # replace media
        self._send(StatusType.ERROR_OCCURRED, Phase.WAITING_TO_RECEIVE, (first, second))

    def _send(self, kind: StatusType, phase: Phase, errors: tuple[int, int] = (0, 0)) -> None:
        if not self._decoder.notify or self._condition.fault in SILENT:
            return
        roll = self._decoder.loaded_roll()
        self._reply(status(self._model, roll, kind, phase, errors, self._decoder.various_mode))
