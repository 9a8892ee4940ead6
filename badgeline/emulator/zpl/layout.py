"""One ZPL label format laid out: its fields at their origins, drawn at the printer's dots.

Fields are kept as they are read (`^FO`/`^FT` origin, font, data) and drawn
at `^XZ`, when `^PW` and `^LL` are final. Dots are only ever added: a
field's white does not erase what is under it (ZPL II Programming Guide,
`^FR` Field Reverse Print is what would). Text is drawn in DejaVu Sans Mono
scaled to the field's height and width (`^A`, `^CF`): the positions and
sizes of a Zebra's fonts, not their shapes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from PIL import Image, ImageDraw, ImageOps

from badgeline.emulator.glyphs import text_image
from badgeline.emulator.label import MAX_LABEL_LENGTH_DOTS, MAX_LABEL_WIDTH_DOTS, Label

# ^A orientation -> how the drawn text turns (N normal, R 90°, I 180°, B 270°).
_TURNS = {
    "R": Image.Transpose.ROTATE_270,
    "I": Image.Transpose.ROTATE_180,
    "B": Image.Transpose.ROTATE_90,
}
MAX_FIELDS = 512


@dataclass(frozen=True)
class Font:
    name: str
    orientation: str
    height: int
    width: int


# The default font, A, is 9 dots high and 5 wide (^CF).
DEFAULT_FONT = Font("A", "N", 9, 5)


@dataclass(frozen=True)
class _Picture:
    x: int
    y: int
    image: Image.Image  # mode "1", black = dot


@dataclass(frozen=True)
class _Box:
    x: int
    y: int
    width: int
    height: int
    thickness: int
    black: bool


@dataclass
class LabelLayout:
    """What one format has placed so far, in dots from the label's top left corner."""

    items: list[_Picture | _Box] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    truncated: bool = False

    @property
    def has_fields(self) -> bool:
        return bool(self.items or self.text)

    def _room(self) -> bool:
        if len(self.items) >= MAX_FIELDS:
            self.truncated = True
            return False
        return True

    def add_picture(self, x: int, y: int, image: Image.Image) -> None:
        if self._room():
            self.items.append(_Picture(x, y, image))

    def add_text(self, x: int, y: int, text: str, font: Font, baseline: bool) -> None:
        """`baseline`: ^FT places text by its baseline, ^FO by its top left corner."""
        self.text.append(text)
        if not text.strip() or not self._room():
            return
        glyphs = text_image(text[:MAX_LABEL_WIDTH_DOTS])
        height = max(1, min(font.height, MAX_LABEL_LENGTH_DOTS))
        cell = font.width or max(1, height * glyphs.width // max(1, glyphs.height * len(text)))
        width = max(1, min(cell * len(text), MAX_LABEL_WIDTH_DOTS))
        image = glyphs.resize((width, height), Image.Resampling.NEAREST)
        if font.orientation in _TURNS:
            image = image.transpose(_TURNS[font.orientation])
        self.items.append(_Picture(x, y - image.height if baseline else y, image))

    def add_box(self, x: int, y: int, box: tuple[int, int, int], black: bool) -> None:
        width, height, thickness = box
        if self._room():
            self.items.append(_Box(x, y, width, height, thickness, black))

    def draw(
        self, width: int, length: int, dpi: int, reprint: bool, *, inverted: bool = False
    ) -> Label:
        """The label `width` x `length` dots (length 0: as long as what is on it);
        `inverted` (^PO I): the whole format turned 180 degrees on the label."""
        if length <= 0:
            length = max([1, *(_bottom(item) for item in self.items)])
        truncated = self.truncated or width > MAX_LABEL_WIDTH_DOTS
        truncated = truncated or length > MAX_LABEL_LENGTH_DOTS
        width = max(1, min(width, MAX_LABEL_WIDTH_DOTS))
        length = min(length, MAX_LABEL_LENGTH_DOTS)
        canvas = Image.new("1", (width, length), 1)
        draw = ImageDraw.Draw(canvas)
        for item in self.items:
            if isinstance(item, _Picture):
                # The mask is set where the picture is black: only those dots print.
                canvas.paste(0, (item.x, item.y), ImageOps.invert(item.image.convert("L")))
            elif item.width > 0 and item.height > 0:
                right, bottom = item.x + item.width - 1, item.y + item.height - 1
                thickness = max(1, min(item.thickness, item.width, item.height))
                draw.rectangle((item.x, item.y, right, bottom), outline=0 if item.black else 1,
                               width=thickness)  # fmt: skip
        if inverted:
            canvas = canvas.transpose(Image.Transpose.ROTATE_180)
        return Label(canvas, list(self.text), truncated, reprint, dpi=(dpi, dpi))


def _bottom(item: _Picture | _Box) -> int:
    if isinstance(item, _Picture):
        return item.y + item.image.height
    return item.y + item.height
