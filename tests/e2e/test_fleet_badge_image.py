"""What came out of the printer is the badge PDF: the emulator's PNG against a
direct rendering of the source PDF, through every process in between."""

from __future__ import annotations

from PIL import Image, ImageChops

from badgeline.badge.raster import render_badge
from badgeline.samples import sample_badge_pdf
from tests.e2e.venue import E2EVenue, printed_on, submitted_job_id, wait_until_printed

WIDTH_DOTS = 576  # the agents' default: 80 mm paper
# The stated tolerance: at most 0.1 % of the badge's dots may differ between the
# emulator's picture and the direct rendering. Both are the same PDFium render
# and the same Floyd-Steinberg dither, so the expected difference is 0; the
# slack only allows for a different PDFium build in the agent's render worker.
MAX_DIFFERENT_DOTS = 0.001
# Where the raster may start in the PNG: the emulator leaves a top margin.
MAX_TOP_OFFSET = 64


def different_dots(printed: Image.Image, rendered: Image.Image, top: int) -> float:
    """The share of `rendered`'s dots that differ from `printed`'s, `top` rows down."""
    box = (0, top, rendered.width, top + rendered.height)
    window = printed.crop(box).convert("L")
    diff = ImageChops.difference(window, rendered.convert("L"))
    histogram = diff.histogram()
    return 1 - histogram[0] / (rendered.width * rendered.height)


def best_alignment(printed: Image.Image, rendered: Image.Image) -> tuple[int, float]:
    """The top offset where the rendering fits the print best, and its difference."""
    tops = range(min(MAX_TOP_OFFSET, printed.height - rendered.height) + 1)
    return min(((top, different_dots(printed, rendered, top)) for top in tops),
               key=lambda fit: fit[1])  # fmt: skip


def test_the_printed_png_matches_a_direct_rendering_of_the_source_pdf(
    healthy_fleet: E2EVenue,
) -> None:
    venue = healthy_fleet
    # GIVEN a badge of its own, uploaded as a kiosk would
    pdf = sample_badge_pdf("A-PNG-0042", "Grace Pixelperfect", "Raster & Sons")
    ref = venue.upload_badge(pdf)

    # WHEN it is printed on printer-b through the coordinator and printer-b's agent
    job_id = submitted_job_id(venue.submit("printer-b", "A-PNG-0042", ref))
    wait_until_printed(venue, [job_id], timeout_s=30)

    # THEN the emulator's picture holds the rendering of the PDF, within tolerance
    [row] = [row for row in printed_on(venue, "printer-b") if row["job_id"] == job_id]
    with Image.open(row["png"]) as png:
        printed = png.convert("1")
    rendered = render_badge(pdf, WIDTH_DOTS)
    assert printed.width == WIDTH_DOTS and printed.height > rendered.height
    top, difference = best_alignment(printed, rendered)
    print(f"\nPNG {printed.size}, rendering {rendered.size}, raster at row {top}, "
          f"{difference:.5%} of its dots differ (tolerance {MAX_DIFFERENT_DOTS:.1%})")  # fmt: skip
    assert difference <= MAX_DIFFERENT_DOTS
    # AND the comparison can tell badges apart: another attendee's badge does not fit
    other = render_badge(sample_badge_pdf("A-PNG-0043", "Alan Otherbadge", "Raster & Sons"),
                         WIDTH_DOTS)  # fmt: skip
    assert different_dots(printed, other, top) > 10 * MAX_DIFFERENT_DOTS
