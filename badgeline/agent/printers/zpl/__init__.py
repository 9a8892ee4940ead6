"""Zebra ZPL II as a printer family: ZD421, ZD621 and ZD411 desktop label printers.

Modelled on Zebra's ZPL II Programming Guide: the label format in
encoder.py, the `~HS` and `~HQES` answers in status.py and replies.py, the
print confirmation in confirmation.py, the models and labels in media.py.
"""

from __future__ import annotations

from typing import Any

from badgeline.agent.printers.completion import Completion
from badgeline.agent.printers.family import LabelLengthUnknown, PrinterFamily
from badgeline.agent.printers.link import LinkIo, PrinterLink
from badgeline.agent.printers.realtime_status import clip
from badgeline.agent.printers.replies import Replies
from badgeline.agent.printers.zpl import encoder
from badgeline.agent.printers.zpl.confirmation import poll_label_out
from badgeline.agent.printers.zpl.media import ZplMedia, zpl_media
from badgeline.agent.printers.zpl.replies import ZplReplies
from badgeline.agent.printers.zpl.status import (
    HOST_STATUS,
    PRINTER_STATUS,
    frames,
    health_from_host_status,
    health_from_printer_status,
    parse_host_status,
    parse_printer_status,
)
from badgeline.badge.layout import LabelLayout
from badgeline.protocol.agent_models import PrinterHealthReport
from badgeline.protocol.states import Confirmation, PaperLevel, PrinterLanguage

__all__ = ["LabelLengthUnknown", "ZplFamily", "ZplMedia"]

# The footer band: 3 mm of the label, 24 dots at 203 dpi.
FOOTER_MM = 3
_PAPER_ORDER = (PaperLevel.OK, PaperLevel.LOW, PaperLevel.OUT)


class ZplFamily(PrinterFamily):
    language = PrinterLanguage.ZPL
    own_confirmation = Confirmation.HOST_STATUS
    probe_steps = 3  # open, a ~HS answer, a ~HQES answer
    # A Zebra's USB packets are 64 bytes; a ~HS answer is about 80, in two.
    reply_chunk = 64
    # The labels in flight are confirmed together once the Zebra has none left, so it
    # idles from the last one's end until a poll sees it: a ~HS (3 bytes, about 80
    # back) every 50 ms keeps that short.
    longest_confirm_poll_s = 0.05

    def __init__(self, media: ZplMedia, *, cut: bool = False) -> None:
        self.media = media
        self.cut = cut
        # The label length ~HS reported, when none is configured.
        self.learned_length: int | None = None

    @classmethod
    def configured(cls, *, model: str | None, dpi: int | None = None,
                   label_width_dots: int | None = None, label_length_dots: int | None = None,
                   cut: bool | None = None, **_: Any) -> ZplFamily:  # fmt: skip
        media = zpl_media(model, dpi, label_width_dots, label_length_dots)
        return cls(media, cut=bool(cut))

    @property
    def model(self) -> str:
        return self.media.model

    def describe(self) -> str:
        length = self.media.length_dots or self.learned_length
        size = f"{self.media.width_dots}x{length or '?'}"
        return f"{self.media.model} {self.media.dpi} dpi {size} dots"

    def new_replies(self) -> Replies:
        return ZplReplies()

    def read_health(self, link: PrinterLink) -> PrinterHealthReport:
        """`~HS`, then `~HQES` (cutter faults, paper near end; and why `~HS` was silent)."""
        host = link.read_status(HOST_STATUS)
        printer = link.read_status(PRINTER_STATUS)
        reports = []
        if host_status := _newest_host_status(host or b""):
            if self.media.length_dots is None:
                self.learned_length = host_status.label_length_dots
            reports.append(health_from_host_status(host_status, self.media.length_dots))
        if printer_status := _newest_printer_status((host or b"") + (printer or b"")):
            reports.append(health_from_printer_status(printer_status))
        if reports:
            return _merged(reports)
        foreign = getattr(link.replies, "foreign", None)
        hint = (
            f'it answered as a {foreign} printer: set printer.language = "{foreign}"'
            if foreign
            else "printer off, or not a ZPL printer: check printer.language"
        )
        detail = clip(f"no answer to ~HS or ~HQES ({hint})")
        return PrinterHealthReport(reachable=False, detail=detail)

    def layout(self, footer: bool) -> LabelLayout:
        length = self.media.length_dots or self.learned_length
        if length is None:
            raise LabelLengthUnknown(
                "the label length is not known yet (the printer has not answered ~HS):"
                " set printer.label_length_dots"
            )
        band = FOOTER_MM * self.media.dpi * 10 // 254 if footer else 0
        return LabelLayout(self.media.width_dots, length, band)

    def encode(self, packed: bytes, size: tuple[int, int], footer: str | None) -> bytes:
        layout = self.layout(footer is not None)
        return encoder.label_format(packed, size, layout, footer, cut=self.cut)

    def mark(self, replies: Replies) -> int:
        assert isinstance(replies, ZplReplies)
        return replies.host_status_asked

    def poll(self, io: LinkIo, mark: Any, pause_s: float) -> Completion | None:
        return poll_label_out(io, int(mark), pause_s)


def _newest_host_status(raw: bytes) -> Any:
    found, _ = frames(raw)
    strings = [frame for frame in found if b"ERRORS" not in frame]
    for index in range(len(strings) - 3, -1, -3):
        try:
            return parse_host_status(strings[index], strings[index + 1])
        except (ValueError, IndexError):
            continue
    return None


def _newest_printer_status(raw: bytes) -> Any:
    found, _ = frames(raw)
    for frame in reversed(found):
        if b"ERRORS" in frame:
            try:
                return parse_printer_status(frame)
            except ValueError:
                continue
    return None


def _merged(reports: list[PrinterHealthReport]) -> PrinterHealthReport:
    """One report from `~HS` and `~HQES`: every condition either shows."""
    details: list[str] = []
    for report in reports:
        parts = (report.detail or "").split("; ")
        details += [part for part in parts if part and part not in details]
    ribbons = [r.ribbon_pct for r in reports if r.ribbon_pct is not None]
    return PrinterHealthReport(
        reachable=True,
        jammed=any(r.jammed for r in reports),
        cover_open=any(r.cover_open for r in reports),
        paper=max((r.paper for r in reports), key=_PAPER_ORDER.index),
        ribbon_pct=min(ribbons) if ribbons else None,
        paused=any(bool(r.paused) for r in reports),
        detail=clip("; ".join(details)) or None,
    )
