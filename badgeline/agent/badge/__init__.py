"""Badge pipeline: check a badge PDF, rasterise page 1 at the printer's dot width, encode ESC/POS.

The agent should print through `BadgeRenderWorker.badge_to_escpos`: the same
pipeline in a child process with a memory cap and a deadline, because some
hostile PDFs can only be stopped from outside. The in-process functions are
for that worker, the tests and the benchmark. Importing this package stays
cheap: pypdfium2 and Pillow load on first use.
"""

from badgeline.agent.badge.errors import BadgeRejected, RejectReason
from badgeline.agent.badge.pdfcheck import DEFAULT_LIMITS, BadgeLimits, check_badge_pdf
from badgeline.agent.badge.raster import (
    WIDTH_DOTS_58MM,
    WIDTH_DOTS_80MM,
    badge_to_escpos,
    dither_to_1bit,
    encode_escpos,
    job_footer,
    render_badge,
    render_grayscale,
)
from badgeline.agent.badge.sandbox import BadgeRenderWorker, SandboxLimits

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
