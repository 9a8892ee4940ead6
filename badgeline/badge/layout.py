"""Where a badge goes on a label: the label's dots, and the band its footer takes.

Shared by the agent, which knows the printer's media, and the render worker,
which fits the badge's page into it (raster.render_label). Plain data, so the
worker's request carries it as JSON.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

# The smallest label a badge is laid out on: below this nothing on it is legible.
MIN_LABEL_DOTS = 64


@dataclass(frozen=True)
class LabelLayout:
    """One label: `width_dots` across the head, `length_dots` along the feed.

    `length_dots` None is continuous media: the label is as long as the page's
    proportion makes it at that width (plus the footer band). `footer_dots` is
    a band kept free at the bottom for the `job <id>` footer (0: no footer);
    with `draw_footer` the worker draws the footer in it (for languages that
    print only pictures), otherwise the printer prints it in its own font.
    """

    width_dots: int
    length_dots: int | None = None
    footer_dots: int = 0
    draw_footer: bool = False

    def __post_init__(self) -> None:
        if self.width_dots < MIN_LABEL_DOTS:
            raise ValueError(f"a label is at least {MIN_LABEL_DOTS} dots wide")
        if self.length_dots is not None and self.length_dots - self.footer_dots < MIN_LABEL_DOTS:
            raise ValueError(
                f"a label {self.length_dots} dots long leaves the badge less than"
                f" {MIN_LABEL_DOTS} dots beside a {self.footer_dots}-dot footer"
            )

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LabelLayout:
        return cls(
            width_dots=int(data["width_dots"]),
            length_dots=None if data.get("length_dots") is None else int(data["length_dots"]),
            footer_dots=int(data.get("footer_dots", 0)),
            draw_footer=bool(data.get("draw_footer", False)),
        )
