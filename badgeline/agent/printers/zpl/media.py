"""Zebra desktop printers and their labels: head widths, resolutions, the default badge label.

The models are the ZD421, ZD621 (4-inch) and ZD411 (2-inch) desktop printers,
each at 203 or 300 dpi (8 or 12 dots per mm: ZPL II Programming Guide, `^MU`
Set Units of Measurement). The print head is 104 mm wide on the 4-inch
models and 56 mm on the ZD411: a label is at most that wide.
"""

from __future__ import annotations

from dataclasses import dataclass

MODELS = ("ZD421", "ZD621", "ZD411")
HEAD_MM = {"ZD421": 104, "ZD621": 104, "ZD411": 56}
DOTS_PER_MM = {203: 8, 300: 12}
# A badge label when none is configured: 4 x 3 in on the 4-inch models, 2 x 1 in on the ZD411.
DEFAULT_INCHES = {"ZD421": (4, 3), "ZD621": (4, 3), "ZD411": (2, 1)}
# ~HS reports the label length in four digits (string 1, dddd).
MAX_LENGTH_DOTS = 9999


@dataclass(frozen=True)
class ZplMedia:
    """The label the agent lays a badge out on (`length_dots` None: learned from ~HS)."""

    model: str
    dpi: int
    width_dots: int
    length_dots: int | None

    @property
    def head_dots(self) -> int:
        return HEAD_MM[self.model] * DOTS_PER_MM[self.dpi]


def zpl_media(
    model: str | None, dpi: int | None, width_dots: int | None, length_dots: int | None
) -> ZplMedia:
    """The configured label, with defaults; ValueError naming the setting that is wrong."""
    model = model or MODELS[0]
    if model not in HEAD_MM:
        raise ValueError(f"printer.model {model!r} is not a ZPL model here: one of {MODELS}")
    dpi = dpi or 203
    if dpi not in DOTS_PER_MM:
        raise ValueError(f"printer.dpi: a {model} prints at 203 or 300 dpi, not {dpi}")
    across, _ = DEFAULT_INCHES[model]
    media = ZplMedia(model, dpi, width_dots or across * dpi, length_dots)
    if media.width_dots > media.head_dots:
        raise ValueError(
            f"printer.label_width_dots {media.width_dots} is wider than the {model}'s"
            f" {HEAD_MM[model]} mm head ({media.head_dots} dots at {dpi} dpi)"
        )
    if length_dots is not None and length_dots > MAX_LENGTH_DOTS:
        raise ValueError(f"printer.label_length_dots is at most {MAX_LENGTH_DOTS}")
    return media
