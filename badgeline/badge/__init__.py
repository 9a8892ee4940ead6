"""Badge pipeline: check a badge PDF, rasterise page 1 at the printer's dot width, encode ESC/POS.

The agent should print through `BadgeRenderWorker.badge_to_escpos`: the same
pipeline in a child process with a memory cap and a deadline, because some
hostile PDFs can only be stopped from outside. The in-process functions are
for that worker, the tests and the benchmark. Importing this package stays
cheap: the checks and the rasteriser load on first use, pypdfium2 and Pillow
when they run.
"""

import importlib
from typing import TYPE_CHECKING, Any

from badgeline.badge.errors import BadgeRejected, RejectReason
from badgeline.badge.limits import DEFAULT_LIMITS, BadgeLimits
from badgeline.badge.sandbox import BadgeRenderWorker, SandboxLimits

if TYPE_CHECKING:
    from badgeline.badge.pdfcheck import check_badge_pdf
    from badgeline.badge.raster import (
        WIDTH_DOTS_58MM,
        WIDTH_DOTS_80MM,
        badge_to_escpos,
        dither_to_1bit,
        encode_escpos,
        job_footer,
        render_badge,
        render_grayscale,
    )

# The checks and the rasteriser load on first use: the agent's own process
# renders in the worker and needs neither (they and ctypes are ~0.6 MB of its RSS).
_LAZY = {
    "check_badge_pdf": "pdfcheck",
    **dict.fromkeys(
        ("WIDTH_DOTS_58MM", "WIDTH_DOTS_80MM", "badge_to_escpos", "dither_to_1bit",
         "encode_escpos", "job_footer", "render_badge", "render_grayscale"),
        "raster",
    ),
}  # fmt: skip


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


__all__ = [
    "DEFAULT_LIMITS",
    "WIDTH_DOTS_58MM",
    "WIDTH_DOTS_80MM",
    "BadgeLimits",
    "BadgeRejected",
    "BadgeRenderWorker",
    "RejectReason",
    "SandboxLimits",
    "badge_to_escpos",
    "check_badge_pdf",
    "dither_to_1bit",
    "encode_escpos",
    "job_footer",
    "render_badge",
    "render_grayscale",
]
