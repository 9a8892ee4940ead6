"""Brother QL models and the DK rolls they load, as the Raster Command Reference lists them.

"Software Developer's Manual, Raster Command Reference" for the QL-800/810W/
820NWB and for the QL-1100/1110NWB, 2.3 Page data details: every raster
line drives all of the head's pins (2.3.5 Raster line: 90 bytes, 720 pins,
on the QL-800 series; 162 bytes, 1296 pins, on the QL-1100 series), and a
roll is printed only on its printable pins (2.3.2 Page size), the rest
being margin. All are 300 dpi across (2.3.1 Resolution), 300 or 600 along
(high resolution, ESC i K bit 6).
"""

from __future__ import annotations

from dataclasses import dataclass

from badgeline.emulator.media import Media

DPI = 300


@dataclass(frozen=True)
class Model:
    name: str
    code: int  # status byte 4 (Model code)
    pins: int
    wide: bool  # takes the 102 mm rolls (QL-1100 series)

    @property
    def line_bytes(self) -> int:
        return self.pins // 8


MODELS = {
    model.name: model
    for model in (
        Model("QL-820NWB", 0x41, 720, False),
        Model("QL-1110NWB", 0x44, 1296, True),
        Model("QL-800", 0x38, 720, False),
        Model("QL-810W", 0x39, 720, False),
        Model("QL-1100", 0x43, 1296, True),
        Model("QL-1115NWB", 0x45, 1296, True),
    )
}
# The QL-1100 series' head is 1296 pins: its rolls sit 44 pins further in.
WIDE_EXTRA_MARGIN = 44
SERIES_CODE = 0x34


@dataclass(frozen=True)
class Roll:
    width_mm: int
    length_mm: int  # 0: continuous length tape
    width_dots: int  # printable pins
    length_dots: int  # printable length of a die-cut label
    margin_pins: int  # unprinted pins before the printable ones, in the order sent
    wide_only: bool = False

    @property
    def die_cut(self) -> bool:
        return self.length_mm > 0

    @property
    def name(self) -> str:
        return f"{self.width_mm}x{self.length_mm} mm die-cut" if self.die_cut else (
            f"{self.width_mm} mm continuous"
        )  # fmt: skip


ROLLS = (
    Roll(12, 0, 106, 0, 29),
    Roll(29, 0, 306, 0, 6),
    Roll(38, 0, 413, 0, 12),
    Roll(50, 0, 554, 0, 12),
    Roll(54, 0, 590, 0, 0),
    Roll(62, 0, 696, 0, 12),
    Roll(102, 0, 1164, 0, 12, wide_only=True),
    Roll(17, 54, 165, 566, 0),
    Roll(17, 87, 165, 956, 0),
    Roll(23, 23, 202, 202, 42),
    Roll(29, 42, 306, 425, 6),
    Roll(29, 90, 306, 991, 6),
    Roll(38, 90, 413, 991, 12),
    Roll(39, 48, 425, 495, 6),
    Roll(52, 29, 578, 271, 0),
    Roll(62, 29, 696, 271, 12),
    Roll(62, 100, 696, 1109, 12),
    Roll(102, 51, 1164, 526, 12, wide_only=True),
    Roll(102, 152, 1164, 1660, 12, wide_only=True),
)
DEFAULT_ROLL = Roll(62, 0, 696, 0, 12)


def rolls_for(model: Model) -> tuple[Roll, ...]:
    return tuple(roll for roll in ROLLS if model.wide or not roll.wide_only)


def roll_for(model: Model, media: Media) -> Roll:
    """The roll whose printable width and label length are `media`'s, or ValueError."""
    if media.dpi != DPI:
        raise ValueError(f"a {model.name} prints at {DPI} dpi, not {media.dpi}")
    for roll in rolls_for(model):
        if (roll.width_dots, roll.length_dots) == (media.width_dots, media.length_dots):
            return roll
    known = ", ".join(f"{roll.width_dots}x{roll.length_dots} ({roll.name})"
                      for roll in rolls_for(model))  # fmt: skip
    raise ValueError(f"a {model.name} loads DK rolls of width_dots x length_dots {known}")


def margin_pins(model: Model, roll: Roll) -> int:
    return roll.margin_pins + (WIDE_EXTRA_MARGIN if model.wide else 0)
