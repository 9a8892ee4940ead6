"""Rendering a badge at the printer's dot width and encoding it as ESC/POS raster."""

from __future__ import annotations

import pytest
from PIL import Image, ImageChops

from badgeline import samples
from badgeline.badge import (
    WIDTH_DOTS_58MM,
    WIDTH_DOTS_80MM,
    BadgeLimits,
    BadgeRejected,
    RejectReason,
    badge_to_escpos,
    encode_escpos,
    render_badge,
)
from tests.badge.escpos_reader import read_escpos


def same_pixels(first: Image.Image, second: Image.Image) -> bool:
    return (
        first.size == second.size
        and ImageChops.difference(first.convert("L"), second.convert("L")).getbbox() is None
    )


@pytest.mark.parametrize("width_dots", [WIDTH_DOTS_80MM, WIDTH_DOTS_58MM])
def test_the_badge_is_rendered_exactly_at_the_dot_width(good_badge: bytes, width_dots: int) -> None:
    # GIVEN an 80 x 100 mm badge WHEN rendered for an 80 mm or a 58 mm printer
    image = render_badge(good_badge, width_dots)
    # THEN it is 1-bit, exactly the printer's width, and keeps the page's proportions
    assert image.mode == "1"
    assert image.width == width_dots
    assert image.height == round(width_dots * 100 / 80)


def test_the_rendered_badge_has_ink_on_it(good_badge: bytes) -> None:
    # GIVEN a badge with a name and a QR code WHEN rendered
    image = render_badge(good_badge, WIDTH_DOTS_80MM)
    # THEN some dots are black and most are white
    histogram = image.convert("L").histogram()
    black, white = histogram[0], histogram[255]
    assert black + white == image.width * image.height
    assert 0.05 < black / (black + white) < 0.5


def test_the_raster_bands_decode_back_to_the_rendered_image(good_badge: bytes) -> None:
    # GIVEN the rendered badge
    image = render_badge(good_badge, WIDTH_DOTS_80MM)
    # WHEN encoded as ESC/POS and read back by an independent reader
    printed = read_escpos(encode_escpos(image, footer=None))
    # THEN every band is at most 256 rows and 72 bytes wide, and the dots match exactly
    assert printed.bands, "no raster command"
    assert all(band.rows <= 256 and band.bytes_per_row == 72 for band in printed.bands)
    assert sum(band.rows for band in printed.bands) == image.height
    assert same_pixels(printed.raster_image(image.width), image)


def test_a_width_that_is_not_a_whole_byte_leaves_no_dots_past_the_edge(good_badge: bytes) -> None:
    # GIVEN a badge rendered 100 dots wide (12.5 bytes a row)
    image = render_badge(good_badge, 100)
    # WHEN encoded and read back
    printed = read_escpos(encode_escpos(image))
    # THEN rows are 13 bytes, the padding bits are white, and the dots match
    assert {band.bytes_per_row for band in printed.bands} == {13}
    assert all(
        band.data[row * 13 + 12] & 0x0F == 0 for band in printed.bands for row in range(band.rows)
    )
    assert same_pixels(printed.raster_image(100), image)


def test_smaller_bands_carry_the_same_image(good_badge: bytes) -> None:
    image = render_badge(good_badge, WIDTH_DOTS_58MM)
    printed = read_escpos(encode_escpos(image, band_rows=24))
    assert max(band.rows for band in printed.bands) == 24
    assert same_pixels(printed.raster_image(image.width), image)


def test_a_job_footer_is_one_centred_line_then_feed_and_cut(good_badge: bytes) -> None:
    # GIVEN a badge for job 42-abc WHEN converted to ESC/POS
    printed = read_escpos(badge_to_escpos(good_badge, WIDTH_DOTS_80MM, job_id="42-abc"))
    # THEN it initialises first, prints the raster, a centred `job 42-abc` line,
    # feeds and ends with a partial cut
    assert printed.commands[0] == "ESC @"
    assert printed.text_lines == ["job 42-abc"]
    text_at = printed.commands.index("TEXT")
    assert printed.commands[text_at - 1] == "ESC a 1"
    assert printed.commands[text_at + 1] == "ESC a 0"
    assert max(i for i, c in enumerate(printed.commands) if c == "GS v 0") < text_at
    assert printed.commands[-2:] == ["ESC d 3", "GS V 66 0"]


def test_without_a_job_id_there_is_no_footer_but_still_a_cut(good_badge: bytes) -> None:
    escpos = badge_to_escpos(good_badge, WIDTH_DOTS_58MM)
    printed = read_escpos(escpos)
    assert printed.text_lines == []
    assert escpos.endswith(b"\x1dVB\x00")


def test_the_whole_path_prints_what_render_badge_renders(other_badge: bytes) -> None:
    # GIVEN a badge WHEN converted in one call and rendered separately
    printed = read_escpos(badge_to_escpos(other_badge, WIDTH_DOTS_80MM, job_id="7"))
    # THEN the printed dots are the rendered dots
    assert same_pixels(
        printed.raster_image(WIDTH_DOTS_80MM), render_badge(other_badge, WIDTH_DOTS_80MM)
    )


def test_different_badges_print_differently(good_badge: bytes, other_badge: bytes) -> None:
    assert not same_pixels(render_badge(good_badge, 384), render_badge(other_badge, 384))


def test_a_hostile_pdf_never_reaches_the_printer() -> None:
    # GIVEN a PDF with a non-embedded font WHEN converted THEN it is refused, no bytes made
    with pytest.raises(BadgeRejected) as refused:
        badge_to_escpos(samples.core_font_badge_pdf(), WIDTH_DOTS_80MM, job_id="1")
    assert refused.value.reason_code is RejectReason.FONT_NOT_EMBEDDED


def test_a_render_past_its_deadline_is_abandoned(good_badge: bytes) -> None:
    # GIVEN a deadline already passed WHEN rendering THEN PDFium is stopped and it is refused
    with pytest.raises(BadgeRejected) as refused:
        render_badge(good_badge, WIDTH_DOTS_80MM, BadgeLimits(max_render_seconds=-1))
    assert refused.value.reason_code is RejectReason.TOO_COMPLEX


@pytest.mark.parametrize("footer", ["job 1\x1bi", "job 1\n", "jöb 1"])
def test_a_footer_cannot_smuggle_printer_commands(footer: str) -> None:
    with pytest.raises(ValueError, match="printable ASCII"):
        encode_escpos(Image.new("1", (8, 8), 1), footer)


@pytest.mark.parametrize("width_dots", [0, -8, 5000])
def test_an_impossible_width_is_a_programming_error(good_badge: bytes, width_dots: int) -> None:
    with pytest.raises(ValueError, match="width"):
        render_badge(good_badge, width_dots)


def test_only_1_bit_images_are_encoded() -> None:
    with pytest.raises(ValueError, match="mode '1'"):
        encode_escpos(Image.new("L", (8, 8), 255))


def test_the_printer_emulator_reads_one_badge_and_its_job_id_back(good_badge: bytes) -> None:
    # GIVEN the bytes for job job-0042, arriving in 1 KB pieces as over TCP
    from badgeline.emulator import EscPosDecoder, PageCut, job_ids_in

    escpos = badge_to_escpos(good_badge, WIDTH_DOTS_80MM, job_id="job-0042")
    decoder = EscPosDecoder()
    # WHEN the emulator's decoder reads them
    events = [
        event
        for start in range(0, len(escpos), 1024)
        for event in decoder.feed(escpos[start : start + 1024])
    ]
    # THEN it sees exactly one partially cut page carrying the job id, and no unknown command
    cuts = [event for event in events if isinstance(event, PageCut)]
    assert len(cuts) == 1 and cuts[0].partial
    assert job_ids_in(cuts[0].page.text) == ["job-0042"]
    assert decoder.unknown_commands == 0
    assert cuts[0].page.raster_rows == render_badge(good_badge, WIDTH_DOTS_80MM).height
