"""How a badge PDF's page sits on a printed label: objective figures to compare two systems'
labels of the same badge (bench/vs_cups_zpl.py).

From the label's PNG (as the emulator saved it): its size in dots and resolution, and the
bounding box of its black dots (above a footer band, when the system prints one). From
the PDF: the bounding box of the page's own content, in points (rendered at 288 dpi).
Together: whether the page was turned a quarter onto the label, the badge's scale in label
dots per PDF point (content box against content box), and how much of the PDF page (its
area) fits on the label at that scale: 100 % when the page was fitted whole, less when
it was scaled past the label and cropped. Two labels are as sharp as each other when
they have the same dots at the same resolution; the one with the larger scale shows the
badge larger, and one that shows less than all of the page has cut its edges off.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, ImageOps

PDF_RENDER_SCALE = 4  # 288 dpi: a content box to a quarter of a point


@dataclass(frozen=True)
class LabelFit:
    size: tuple[int, int]  # the label, dots across x along
    dpi: tuple[int, int]
    box: tuple[int, int, int, int]  # black dots: left, top, right, bottom (exclusive)
    turned: bool  # the page lies turned a quarter on the label
    scale: float  # label dots per PDF point
    page_shown: float  # the share of the PDF page's area that fits on the label

    def describe(self) -> str:
        left, top, right, bottom = self.box
        width, length = self.size
        lie = "turned" if self.turned else "upright"
        return (f"label {width} x {length} dots at {self.dpi[0]} dpi; black dots in "
                f"x {left}-{right}, y {top}-{bottom} (margins {left}, {width - right}, "
                f"{top}, {length - bottom}); page {lie}, {self.scale:.3f} dots/pt, "
                f"{self.page_shown:.1%} of the page on the label")  # fmt: skip


def content_box_points(pdf: bytes) -> tuple[tuple[float, float], tuple[float, float, float, float]]:
    """The PDF's first page size and the bounding box of what is drawn on it, in points."""
    import pypdfium2

    document = pypdfium2.PdfDocument(pdf)
    try:
        page = document[0]
        size = page.get_size()
        image = page.render(scale=PDF_RENDER_SCALE, grayscale=True).to_pil().convert("L")
    finally:
        document.close()
    box = ImageOps.invert(image.point(lambda v: 255 if v > 127 else 0)).getbbox()
    if box is None:
        raise ValueError("the PDF page is blank")
    return (float(size[0]), float(size[1])), tuple(v / PDF_RENDER_SCALE for v in box)  # type: ignore[return-value]


def label_fit(png: Path, pdf: bytes, footer_band: int = 0) -> LabelFit:
    with Image.open(png) as image:
        label = image.convert("L")
        dpi = tuple(round(float(v)) for v in image.info.get("dpi", (0, 0)))
    width, length = label.size
    above = label.crop((0, 0, width, length - footer_band))
    box = ImageOps.invert(above.point(lambda v: 255 if v > 127 else 0)).getbbox()
    if box is None:
        raise ValueError(f"{png} has no black dots")
    (page_width, page_height), content = content_box_points(pdf)
    content_width, content_height = content[2] - content[0], content[3] - content[1]
    box_width, box_height = box[2] - box[0], box[3] - box[1]
    aspect = math.log(box_width / box_height)
    turned = abs(aspect - math.log(content_height / content_width)) < abs(
        aspect - math.log(content_width / content_height)
    )
    across, along = (content_height, content_width) if turned else (content_width, content_height)
    scale = (box_width / across + box_height / along) / 2
    page_across, page_along = (page_height, page_width) if turned else (page_width, page_height)
    shown = min(1.0, width / (page_across * scale)) * min(
        1.0, (length - footer_band) / (page_along * scale)
    )
    return LabelFit((width, length), (dpi[0], dpi[1]), box, turned, scale, shown)
