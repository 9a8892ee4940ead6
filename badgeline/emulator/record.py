"""The ground truth: what came out of the printer, its pictures and its counters."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image

from badgeline.emulator.label import Label
from badgeline.emulator.page import Page
from badgeline.emulator.render import render_page

logger = logging.getLogger(__name__)

# The agent prints `job <job_id>` as the badge footer so a print can be traced.
JOB_FOOTER = re.compile(r"job ([A-Za-z0-9_-]{4,64})")


def job_ids_in(lines: list[str]) -> list[str]:
    return [match.group(1) for line in lines if (match := JOB_FOOTER.fullmatch(line.strip()))]


@dataclass(frozen=True)
class PrintedBadge:
    sequence: int
    job_id: str | None
    at: float  # Unix time in seconds when the badge came out
    png: Path | None  # None only if the picture could not be saved
    # ESC/POS: every raster block of the page stacked; a label: the label; mode "1"
    raster: Image.Image | None
    text: list[str]
    connection: int

    # Unix time in seconds when the head started on it (its bytes may still have
    # been arriving): from it to `at` the printer was printing this badge.
    started_at: float | None = None

    def row(self) -> dict[str, Any]:
        """The `/printed` row."""
        return {"job_id": self.job_id, "at": self.at, "started_at": self.started_at,
                "png": str(self.png) if self.png else None}  # fmt: skip


@dataclass
class PrinterCounters:
    discarded: int = 0  # cut pages a fault kept from coming out (on arrival or mid-print)
    abandoned: int = 0  # content on a connection that closed before a cut
    status_queries: int = 0  # real-time status requests received, answered or not
    process_ids_answered: int = 0  # GS ( H process ID responses sent
    process_ids_dropped: int = 0  # GS ( H requests a fault cleared before they were answered
    connections: int = 0  # open now
    connections_total: int = 0

    def clear(self) -> None:
        """Zero the history; `connections` stays because those sockets are still open."""
        self.discarded = self.abandoned = self.status_queries = self.connections_total = 0
        self.process_ids_answered = self.process_ids_dropped = 0


def save_picture(
    page: Page | Label, path: Path, paper_width_dots: int
) -> tuple[Image.Image | None, Path | None]:
    """Save what came out as a PNG (a label at the printer's dots and resolution)."""
    raster = page.raster()
    try:
        if isinstance(page, Label):
            page.image.save(path, format="PNG", dpi=page.dpi)
        else:
            render_page(page, paper_width_dots).save(path, format="PNG")
    except Exception:
        # The badge came out all the same: record it without its picture.
        logger.exception("could not save %s", path)
        return raster, None
    return raster, path
