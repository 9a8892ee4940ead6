"""A badge page fitted to a label as CUPS fits one: same proportions, turned when that is
larger, centred in what the footer band leaves; continuous media as long as the page."""

from __future__ import annotations

from badgeline.badge.layout import LabelLayout
from badgeline.badge.raster import fit_page, render_label
from badgeline.samples import sample_badge_pdf

MM = 72 / 25.4  # PDF points per mm


def test_a_portrait_badge_is_turned_onto_a_landscape_label_and_keeps_its_proportions() -> None:
    # GIVEN an 80 x 100 mm page and a 4 x 3 in label at 203 dpi, less a 24-dot footer band
    width, height, rotate = fit_page(80 * MM, 100 * MM, 812, 609 - 24)
    # THEN it is turned a quarter, fills the band-less length, and keeps 100:80
    assert rotate == 1 and height == 585
    assert abs(width / height - 100 / 80) < 0.01


def test_a_badge_that_fits_upright_stays_upright() -> None:
    # GIVEN the same page on a 62 x 100 mm Brother label (696 x 1109 dots at 300 dpi)
    width, height, rotate = fit_page(80 * MM, 100 * MM, 696, 1109 - 36)
    assert rotate == 0 and width == 696 and abs(height / width - 100 / 80) < 0.01


def test_the_rendered_label_has_the_label_s_dots_and_the_badge_centred() -> None:
    # GIVEN a sample badge rendered on a 4 x 3 in label with a footer band
    layout = LabelLayout(812, 609, 24, draw_footer=True)
    image = render_label(sample_badge_pdf("A-1", "Ada Lovelace", "Engines"), layout, "job j-1")
    # THEN the picture is the label's size exactly, ink on both sides of the middle
    # (centred), and the footer is drawn in the band
    assert image.size == (812, 609) and image.mode == "1"
    left, _, right, _ = image.crop((0, 0, 812, 585)).point(lambda v: 255 - v).getbbox()
    assert abs((left + right) / 2 - 406) < 40
    assert image.crop((0, 585, 812, 609)).point(lambda v: 255 - v).getbbox() is not None


def test_continuous_media_is_as_long_as_the_page_at_the_label_s_width() -> None:
    layout = LabelLayout(696, None, 36)
    image = render_label(sample_badge_pdf("A-2", "Alan Turing", "Bletchley"), layout)
    assert image.width == 696 and abs((image.height - 36) / 696 - 100 / 80) < 0.01
