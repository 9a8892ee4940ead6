"""The media loaded in the printer: what it reports and what a label is laid out on."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Media:
    """Printable width and label length in dots, at the print head's resolution.

    `length_dots` 0 is continuous media (a receipt roll or an endless tape): a
    label is then as long as what is printed on it.
    """

    dpi: int
    width_dots: int
    length_dots: int = 0

    def __post_init__(self) -> None:
        if self.dpi < 1 or self.width_dots < 1 or self.length_dots < 0:
            raise ValueError("dpi and width_dots must be at least 1, length_dots at least 0")

    @property
    def continuous(self) -> bool:
        return self.length_dots == 0

    def row(self) -> dict[str, Any]:
        return asdict(self)
