"""Brother QL models and the DK rolls they load, as the Raster Command Reference lists them.

Brother's "Software Developer's Manual, Raster Command Reference" for the
QL-800/810W/820NWB and for the QL-1100/1110NWB: every raster line drives all
of the head's pins (2.3.5 Raster line: 90 bytes for 720 pins on the QL-800
series, 162 bytes for 1296 pins on the QL-1100 series); a roll is printed
only on its printable pins, after a margin of unprinted ones (2.3.2 Page
size); the head is 300 dpi (2.3.1 Resolution). The status reports the loaded
roll by its width and length in mm and its type (status.py), which is how
the agent checks it against the configured `media`.
"""

from __future__ import annotations

from dataclasses import dataclass

DPI = 300
# Status byte 4, model code (4.2 Status information).
MODEL_CODES = {"QL-800": 0x38, "QL-810W": 0x39, "QL-820NWB": 0x41, "QL-1100": 0x43,
               "QL-1110NWB": 0x44, "QL-1115NWB": 0x45}  # fmt: skip
WIDE = frozenset({"QL-1100", "QL-1110NWB", "QL-1115NWB"})
# The QL-1100 series' head has 1296 pins, its rolls 44 pins further in than on the QL-800's 720.
WIDE_EXTRA_MARGIN = 44
# Feed before a continuous label, in dots (die-cut labels need none): ESC i d.
CONTINUOUS_FEED_DOTS = 35


@dataclass(frozen=True)
class Roll:
    """A DK roll: `length_mm` 0 is continuous tape."""

    width_mm: int
    length_mm: int
    width_dots: int  # printable pins
    length_dots: int  # printable length of a die-cut label (0: continuous)
    margin_pins: int  # unprinted pins before the printable ones, in the order sent
    wide_only: bool = False

    @property
    def die_cut(self) -> bool:
        return self.length_mm > 0

    @property
    def name(self) -> str:
        return f"{self.width_mm}x{self.length_mm}" if self.die_cut else str(self.width_mm)


ROLLS = {
    roll.name: roll
    for roll in (
        Roll(12, 0, 106, 0, 29), Roll(29, 0, 306, 0, 6), Roll(38, 0, 413, 0, 12),
        Roll(50, 0, 554, 0, 12), Roll(54, 0, 590, 0, 0), Roll(62, 0, 696, 0, 12),
        Roll(102, 0, 1164, 0, 12, wide_only=True),
        Roll(17, 54, 165, 566, 0), Roll(17, 87, 165, 956, 0), Roll(23, 23, 202, 202, 42),
        Roll(29, 42, 306, 425, 6), Roll(29, 90, 306, 991, 6), Roll(38, 90, 413, 991, 12),
        Roll(39, 48, 425, 495, 6), Roll(52, 29, 578, 271, 0), Roll(62, 29, 696, 271, 12),
        Roll(62, 100, 696, 1109, 12),
        Roll(102, 51, 1164, 526, 12, wide_only=True),
        Roll(102, 152, 1164, 1660, 12, wide_only=True),
    )
}  # fmt: skip


@dataclass(frozen=True)
class QlMedia:
    model: str
    roll: Roll

    @property
    def pins(self) -> int:
        return 1296 if self.model in WIDE else 720

    @property
    def margin_pins(self) -> int:
        return self.roll.margin_pins + (WIDE_EXTRA_MARGIN if self.model in WIDE else 0)


def ql_media(model: str | None, media: str | None) -> QlMedia:
    """The configured roll on the configured model; ValueError naming the setting."""
    model = model or "QL-820NWB"
    if model not in MODEL_CODES:
        raise ValueError(f"printer.model {model!r} is not a Brother QL here: one of"
                         f" {sorted(MODEL_CODES)}")  # fmt: skip
    name = (media or "62").strip().lower().removeprefix("dk-").replace(" mm", "")
    roll = ROLLS.get(name)
    if roll is None:
        raise ValueError(f"printer.media {media!r} is not a DK roll: one of {sorted(ROLLS)}"
                         " (width in mm, or width x length for die-cut labels)")  # fmt: skip
    if roll.wide_only and model not in WIDE:
        raise ValueError(f"printer.media {roll.name} is 102 mm wide: a {model} takes at most 62")
    return QlMedia(model, roll)
