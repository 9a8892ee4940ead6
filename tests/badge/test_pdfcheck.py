"""The badge PDF check: what it accepts, what it refuses and why."""

from __future__ import annotations

import base64
import struct
import zlib
from collections.abc import Callable

import pytest
from fpdf import FPDF
from PIL import Image

from badgeline import samples
from badgeline.badge import BadgeLimits, BadgeRejected, RejectReason, check_badge_pdf

MIB = 1024 * 1024


def refusal(pdf_bytes: bytes, limits: BadgeLimits | None = None) -> BadgeRejected:
    with pytest.raises(BadgeRejected) as refused:
        if limits is None:
            check_badge_pdf(pdf_bytes)
        else:
            check_badge_pdf(pdf_bytes, limits)
    return refused.value


def test_a_generated_badge_passes(good_badge: bytes) -> None:
    # GIVEN a badge from the sample generator (DejaVu embedded, 80 x 100 mm)
    # WHEN it is checked THEN nothing is raised
    check_badge_pdf(good_badge)


@pytest.mark.parametrize(
    ("make_pdf", "reason"),
    [
        (samples.not_a_pdf, RejectReason.NOT_A_PDF),
        (samples.encrypted_badge_pdf, RejectReason.ENCRYPTED),
        (lambda: samples.encrypted_badge_pdf(user_password=None), RejectReason.ENCRYPTED),
        (samples.malformed_pdf, RejectReason.MALFORMED),
        (samples.oversized_badge_pdf, RejectReason.TOO_LARGE),
        (samples.many_pages_badge_pdf, RejectReason.TOO_MANY_PAGES),
        (samples.giant_page_pdf, RejectReason.PAGE_SIZE),
        (samples.core_font_badge_pdf, RejectReason.FONT_NOT_EMBEDDED),
        (samples.legacy_lzw_pdf, RejectReason.UNSUPPORTED_COMPRESSION),
        (lambda: samples.decompression_bomb_pdf(48 * MIB, layers=1), RejectReason.TOO_COMPLEX),
        (lambda: samples.decompression_bomb_pdf(48 * MIB, layers=3), RejectReason.TOO_COMPLEX),
    ],
    ids=[
        "html-page",
        "user-password",
        "owner-password-only",
        "noise-after-header",
        "6-MiB",
        "50-pages",
        "1200-mm-page",
        "helvetica-not-embedded",
        "lzw",
        "flate-bomb",
        "triple-flate-bomb",
    ],
)
def test_hostile_samples_are_refused_with_their_reason(
    make_pdf: Callable[[], bytes], reason: RejectReason
) -> None:
    # GIVEN a hostile or broken sample WHEN it is checked
    refused = refusal(make_pdf())
    # THEN the refusal names the reason, and says something a person can act on
    assert refused.reason_code is reason
    assert len(refused.message) > 30
    assert str(refused) == refused.message


def test_the_message_names_the_font_that_is_not_embedded() -> None:
    refused = refusal(samples.core_font_badge_pdf())
    assert "Helvetica" in refused.message


def test_a_font_name_shows_only_its_own_characters_and_not_many() -> None:
    # GIVEN text in an unembedded font whose name carries control characters and a long tail
    name = b"Evil#0A#1B#5B31mName" + b"X" * 200
    pdf = samples.hand_built_pdf(
        b"BT /F1 12 Tf 10 10 Td (Hi) Tj ET",
        page_resources=b"<< /Font << /F1 5 0 R >> >>",
        extra_objects=[b"<< /Type /Font /Subtype /Type1 /BaseFont /" + name + b" >>"],
    )
    # WHEN checked THEN the refusal names it without what could confuse a reader's screen
    refused = refusal(pdf)
    assert refused.reason_code is RejectReason.FONT_NOT_EMBEDDED
    assert "'Evil31mNameXXX" in refused.message
    assert not any(ord(c) < 32 or c == "[" for c in refused.message)
    assert len(refused.message) < 250


def test_four_pages_is_the_default_limit(good_badge: bytes) -> None:
    # GIVEN PDFs with exactly 4 and 5 pages of embedded-font badges
    four, five = samples.many_pages_badge_pdf(4), samples.many_pages_badge_pdf(5)
    # WHEN checked THEN 4 passes and 5 is refused
    check_badge_pdf(four)
    assert refusal(five).reason_code is RejectReason.TOO_MANY_PAGES


def test_the_size_limit_is_configurable(good_badge: bytes) -> None:
    # GIVEN a limit just below the badge's size
    limits = BadgeLimits(max_bytes=len(good_badge) - 1)
    # WHEN checked THEN it is too large; at its exact size it passes
    assert refusal(good_badge, limits).reason_code is RejectReason.TOO_LARGE
    check_badge_pdf(good_badge, BadgeLimits(max_bytes=len(good_badge)))


def test_a_bomb_hidden_behind_ascii85_is_still_bounded() -> None:
    # GIVEN content wrapped the way ReportLab writes streams (ASCII85 over Flate),
    # but whose Flate layers expand to 48 MiB
    inner = zlib.compress(zlib.compress(b" " * (48 * MIB), 9), 9)
    stream = base64.a85encode(inner) + b"~>"
    pdf = samples.hand_built_pdf(stream, b"/Filter [/ASCII85Decode /FlateDecode /FlateDecode]")
    # WHEN checked THEN it is refused before PDFium parses it
    assert refusal(pdf).reason_code is RejectReason.TOO_COMPLEX


def test_a_bomb_hidden_behind_asciihex_is_still_bounded() -> None:
    stream = zlib.compress(b" " * (48 * MIB), 9).hex().encode("ascii") + b">"
    pdf = samples.hand_built_pdf(stream, b"/Filter [/ASCIIHexDecode /FlateDecode]")
    assert refusal(pdf).reason_code is RejectReason.TOO_COMPLEX


def test_an_endstream_inside_compressed_data_does_not_cut_the_scan_short() -> None:
    # GIVEN a zlib stream that starts with a stored block containing the word
    # `endstream`, followed by 48 MiB worth of deflated spaces: a reader that
    # trusts /Length decodes all of it
    decoy = b"\nendstream\nendobj\n"
    stored_block = b"\x00" + struct.pack("<HH", len(decoy), 0xFFFF ^ len(decoy)) + decoy
    deflater = zlib.compressobj(9, zlib.DEFLATED, -15)
    payload = b" " * (48 * MIB)
    deflated = deflater.compress(payload) + deflater.flush()
    checksum = struct.pack(">I", zlib.adler32(payload, zlib.adler32(decoy)))
    stream = b"\x78\x9c" + stored_block + deflated + checksum
    assert zlib.decompress(stream)[: len(decoy)] == decoy  # the stream is valid zlib
    pdf = samples.hand_built_pdf(stream, b"/Filter /FlateDecode")
    # WHEN checked THEN the whole zlib stream counts against the budget
    assert refusal(pdf).reason_code is RejectReason.TOO_COMPLEX


def test_ascii85_and_flate_content_within_bounds_passes() -> None:
    # GIVEN a modest ReportLab-style stream: a line, ASCII85 over Flate
    stream = base64.a85encode(zlib.compress(b"0 0 m 100 100 l S")) + b"~>"
    pdf = samples.hand_built_pdf(stream, b"/Filter [/ASCII85Decode /FlateDecode]")
    # WHEN checked THEN it passes
    check_badge_pdf(pdf)


def test_too_many_drawing_objects_is_too_complex(good_badge: bytes) -> None:
    # GIVEN the sample badge (its QR code is a couple of hundred rectangles)
    # WHEN checked with a limit of 10 drawing objects THEN it is too complex
    refused = refusal(good_badge, BadgeLimits(max_page_objects=10))
    assert refused.reason_code is RejectReason.TOO_COMPLEX


def test_an_image_over_the_pixel_limit_is_refused() -> None:
    # GIVEN a badge whose only content is a 200 x 200 pixel image
    pdf = FPDF(unit="mm", format=(80, 100))
    pdf.add_page()
    pdf.image(Image.new("L", (200, 200), 128), x=10, y=10, w=60)
    pdf_bytes = bytes(pdf.output())
    # WHEN checked under a 10,000-pixel limit THEN it is refused; under the default it passes
    assert refusal(pdf_bytes, BadgeLimits(max_image_pixels=10_000)).reason_code is (
        RejectReason.TOO_COMPLEX
    )
    check_badge_pdf(pdf_bytes)


def test_a_long_thin_page_is_refused() -> None:
    # GIVEN a page 20 mm wide and 400 mm long: it would print as 40 cm of paper
    pdf = FPDF(unit="mm", format=(20, 400))
    pdf.add_page()
    # WHEN checked THEN the page shape is refused
    assert refusal(bytes(pdf.output())).reason_code is RejectReason.PAGE_SIZE


def test_a_truncated_badge_is_refused_or_readable_never_a_crash(good_badge: bytes) -> None:
    # GIVEN a badge cut off at various points (a download that stopped early)
    for length in (10, 100, len(good_badge) // 2, len(good_badge) - 20):
        # WHEN checked THEN it either passes (PDFium repaired it) or is refused with a
        # reason: no other exception escapes
        try:
            check_badge_pdf(good_badge[:length])
        except BadgeRejected as refused:
            assert refused.reason_code in set(RejectReason)
