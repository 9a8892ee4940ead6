"""What a badge PDF may cost: the limits `pdfcheck` enforces and the render worker is given.

Apart from pdfcheck so that the agent's process, which renders in the worker,
can name them without importing the checks themselves (and ctypes).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BadgeLimits:
    """What the agent agrees to print. The defaults fit any real badge with room to spare."""

    max_bytes: int = 5 * 1024 * 1024
    max_pages: int = 4
    max_page_side_mm: float = 1000.0
    # A sliver of a page scaled to the paper width would be metres of paper.
    min_page_side_mm: float = 10.0
    max_aspect_ratio: float = 5.0
    # PDFium parses page content in one uninterruptible call; 16 MiB of dense
    # content parses in about a second here. (Forms drawn many times can
    # still multiply that: the sandbox's memory and time limits are the backstop.)
    max_decoded_bytes: int = 16 * 1024 * 1024
    max_streams: int = 2_000
    max_page_objects: int = 20_000
    max_annotations: int = 500
    max_form_depth: int = 8
    max_image_pixels: int = 16_000_000
    max_render_seconds: float = 2.0


DEFAULT_LIMITS = BadgeLimits()
