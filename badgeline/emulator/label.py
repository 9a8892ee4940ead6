"""A label printer's page: one label, already laid out at the printer's dots.

ESC/POS pages flow top to bottom and are drawn when printed (page.py,
render.py); a ZPL format places its fields at absolute positions and a
Brother QL page is a raster, so both languages hand the print head the
finished picture of the label.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from PIL import Image

# Bounds that keep a hostile or corrupt stream from exhausting memory: 8 in
# wide at 300 dpi, and 40 in long (no badge is), as a mode "1" image.
MAX_LABEL_WIDTH_DOTS = 2400
MAX_LABEL_LENGTH_DOTS = 12000


@dataclass
class Label:
    """One label: black (0) where the head burned a dot, white (1) elsewhere."""

    image: Image.Image
    # Text fields printed on it, top to bottom (the job footer is read from them).
    text: list[str] = field(default_factory=list)
    # Set when a bound above, or a field the emulator could not decode, cut part of it.
    truncated: bool = False
    # ZPL ^JZ: a label an error interrupts is printed again once it clears.
    reprint_after_error: bool = True
    # Why the printer refuses to print it (a Brother QL told of other media than loaded).
    rejection: str | None = None
    # Dots per inch across and along the label (a QL in high resolution: 300 x 600).
    dpi: tuple[int, int] = (203, 203)

    @property
    def has_content(self) -> bool:
        return True

    def raster(self) -> Image.Image:
        return self.image
