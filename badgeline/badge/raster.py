"""Turn a checked badge PDF into the ESC/POS bytes a thermal printer prints.

Page 1 is rendered at exactly the printer's dot width (the paper's printable
width, not its nominal one: 576 dots for 80 mm paper, 384 for 58 mm), kept
in proportion, then dithered to 1 bit because a thermal head only burns a dot
or leaves it. pypdfium2 and Pillow are imported inside the functions so that
importing this module costs the agent nothing at start-up.
"""

from __future__ import annotations

import ctypes
import struct
import time
from typing import TYPE_CHECKING, Any

from badgeline.badge.errors import BadgeRejected, RejectReason
from badgeline.badge.layout import LabelLayout
from badgeline.badge.limits import DEFAULT_LIMITS, BadgeLimits
from badgeline.badge.pdfcheck import open_checked_first_page

if TYPE_CHECKING:
    from PIL import Image

WIDTH_DOTS_80MM = 576
WIDTH_DOTS_58MM = 384
MAX_WIDTH_DOTS = 2048

ESC_INITIALIZE = b"\x1b@"
# GS v 0 m xL xH yL yH: m=0 is normal density; x counts bytes per row, y rows.
RASTER_COMMAND = b"\x1dv0\x00"
# Printers buffer one raster command before printing it; cheap ones hold
# little, so send the image as bands rather than one tall command.
MAX_BAND_ROWS = 256
ALIGN_CENTER = b"\x1ba\x01"
ALIGN_LEFT = b"\x1ba\x00"
# The cutter sits a few lines above the head: feed so the footer clears it.
FEED_BEFORE_CUT = b"\x1bd\x03"
PARTIAL_CUT = b"\x1dVB\x00"  # GS V 66 0: feed to the cutter, cut leaving a hinge

# Pillow packs mode "1" with 1 = white; ESC/POS raster wants 1 = burn a dot.
_INVERT_BITS = bytes(255 - value for value in range(256))


def render_grayscale(
    pdf_bytes: bytes, width_dots: int, limits: BadgeLimits = DEFAULT_LIMITS
) -> Image.Image:
    """Check the PDF, then render page 1 as a mode "L" image exactly `width_dots` wide."""
    _require_width(width_dots)
    with open_checked_first_page(pdf_bytes, limits) as page:
        page_width, page_height = page.get_size()
        height_dots = max(1, round(width_dots * page_height / page_width))
        pixels = _render_page(page, width_dots, height_dots, limits.max_render_seconds)
    from PIL import Image

    return Image.frombuffer("L", (width_dots, height_dots), pixels, "raw", "L", 0, 1)


def dither_to_1bit(grayscale: Image.Image) -> Image.Image:
    """Floyd-Steinberg dither to mode "1": photos and logos keep their tones as dot density."""
    from PIL import Image

    return grayscale.convert("1", dither=Image.Dither.FLOYDSTEINBERG)


def render_badge(
    pdf_bytes: bytes, width_dots: int, limits: BadgeLimits = DEFAULT_LIMITS
) -> Image.Image:
    """Check the PDF and render page 1 as a mode "1" image exactly `width_dots` wide.

    Raises `BadgeRejected` when the PDF fails a check, ValueError for a bad width.
    """
    return dither_to_1bit(render_grayscale(pdf_bytes, width_dots, limits))


def render_label(
    pdf_bytes: bytes,
    layout: LabelLayout,
    footer: str | None = None,
    limits: BadgeLimits = DEFAULT_LIMITS,
) -> Image.Image:
    """Check the PDF and render page 1 fitted to a label, as a mode "1" image of its dots.

    As CUPS fits a page to a label (pdftopdf's fit-to-page with auto-rotation):
    the page keeps its proportions, is turned a quarter (clockwise) when that
    makes it larger on the label, and is centred in what the footer band
    leaves. On continuous media (`length_dots` None) the page fills the width
    and the label is as long as it needs. With `layout.draw_footer` the footer
    text is drawn, centred, in the band at the bottom.
    """
    from PIL import Image

    width = layout.width_dots
    _require_width(width)
    with open_checked_first_page(pdf_bytes, limits) as page:
        page_width, page_height = page.get_size()
        if layout.length_dots is None:
            fitted = (width, max(1, round(width * page_height / page_width)), 0)
            length = fitted[1] + layout.footer_dots
        else:
            length = layout.length_dots
            fitted = fit_page(page_width, page_height, width, length - layout.footer_dots)
        fitted_width, fitted_height, rotate = fitted
        pixels = _render_page(page, fitted_width, fitted_height, limits.max_render_seconds, rotate)
    badge = Image.frombuffer("L", (fitted_width, fitted_height), pixels, "raw", "L", 0, 1)
    label = Image.new("L", (width, length), 255)
    area = length - layout.footer_dots
    label.paste(badge, ((width - fitted_width) // 2, (area - fitted_height) // 2))
    image = dither_to_1bit(label)
    if footer is not None and layout.draw_footer and layout.footer_dots:
        draw_footer(image, footer, area, layout.footer_dots)
    return image


def fit_page(
    page_width: float, page_height: float, width: int, height: int
) -> tuple[int, int, int]:
    """The page's size in dots fitted into `width` x `height`, and PDFium's rotation
    (0, or 1: a quarter turn clockwise, when that fits it larger)."""
    upright = min(width / page_width, height / page_height)
    turned = min(width / page_height, height / page_width)
    if turned > upright * 1.001:
        return (min(width, max(1, round(page_height * turned))),
                min(height, max(1, round(page_width * turned))), 1)  # fmt: skip
    return (min(width, max(1, round(page_width * upright))),
            min(height, max(1, round(page_height * upright))), 0)  # fmt: skip


def draw_footer(image: Image.Image, footer: str, top: int, band: int) -> None:
    from PIL import ImageDraw, ImageFont

    if not all(" " <= character <= "~" for character in footer):
        raise ValueError(f"footer must be printable ASCII without control codes: {footer!r}")
    size = max(8, band * 7 // 10)
    try:
        font: Any = ImageFont.load_default(size=size)
    except TypeError:  # pragma: no cover - Pillow 10.0 has one bitmap size
        font = ImageFont.load_default()
    left, upper, right, lower = font.getbbox(footer)
    x = (image.width - (right - left)) // 2 - left
    y = top + (band - (lower - upper)) // 2 - upper
    ImageDraw.Draw(image).text((x, y), footer, font=font, fill=0)


def job_footer(job_id: str) -> str:
    """The footer line the printer emulator reads a job id back from."""
    return f"job {job_id}"


def encode_escpos(
    image: Image.Image, footer: str | None = None, *, band_rows: int = MAX_BAND_ROWS
) -> bytes:
    """ESC/POS for one badge: initialise, raster bands, optional centred footer, feed, cut.

    `footer` must be printable ASCII: anything else could smuggle printer
    commands into the stream.
    """
    if image.mode != "1":
        raise ValueError(f"encode_escpos needs a mode '1' image, got mode {image.mode!r}")
    if not 1 <= band_rows <= MAX_BAND_ROWS:
        raise ValueError(f"band_rows must be 1..{MAX_BAND_ROWS}, got {band_rows}")
    width, height = image.size
    _require_width(width)
    row_bytes = (width + 7) // 8
    raster = _black_is_one(image.tobytes(), width, row_bytes)
    parts = [ESC_INITIALIZE]
    for top in range(0, height, band_rows):
        rows = min(band_rows, height - top)
        parts.append(RASTER_COMMAND + struct.pack("<HH", row_bytes, rows))
        parts.append(raster[top * row_bytes : (top + rows) * row_bytes])
    if footer is not None:
        parts.append(_footer_line(footer))
    parts.append(FEED_BEFORE_CUT)
    parts.append(PARTIAL_CUT)
    return b"".join(parts)


def badge_to_escpos(
    pdf_bytes: bytes,
    width_dots: int,
    job_id: str | None = None,
    limits: BadgeLimits = DEFAULT_LIMITS,
) -> bytes:
    """Check, render, dither and encode one badge; a `job_id` adds the `job <id>` footer."""
    footer = None if job_id is None else job_footer(job_id)
    return encode_escpos(render_badge(pdf_bytes, width_dots, limits), footer)


def _require_width(width_dots: int) -> None:
    if not 1 <= width_dots <= MAX_WIDTH_DOTS:
        raise ValueError(f"width must be 1..{MAX_WIDTH_DOTS} dots, got {width_dots}")


def _render_page(
    page: Any, width_dots: int, height_dots: int, max_seconds: float, rotate: int = 0
) -> bytearray:
    """Render into a buffer we own, progressively, so a pathological page can be abandoned."""
    import pypdfium2.raw as pdfium_c

    pixels = bytearray(b"\xff") * (width_dots * height_dots)  # white paper
    pixel_array = (ctypes.c_ubyte * len(pixels)).from_buffer(pixels)
    bitmap = pdfium_c.FPDFBitmap_CreateEx(
        width_dots, height_dots, pdfium_c.FPDFBitmap_Gray, pixel_array, width_dots
    )
    if not bitmap:
        raise MemoryError(f"PDFium could not allocate a {width_dots}x{height_dots} bitmap")
    try:
        status = _render_until_deadline(
            page.raw, bitmap, width_dots, height_dots, max_seconds, rotate
        )
    finally:
        pdfium_c.FPDFBitmap_Destroy(bitmap)
        del pixel_array  # release the export so the bytearray is ours alone again
    if status == pdfium_c.FPDF_RENDER_TOBECONTINUED:
        raise BadgeRejected(
            RejectReason.TOO_COMPLEX,
            f"The badge page took more than {max_seconds:g} s to draw; a badge takes "
            "milliseconds. Simplify it (fewer, smaller images) and export again.",
        )
    if status != pdfium_c.FPDF_RENDER_DONE:
        raise BadgeRejected(RejectReason.MALFORMED, "The badge PDF's first page failed to draw.")
    return pixels


def _render_until_deadline(
    raw_page: Any,
    bitmap: Any,
    width_dots: int,
    height_dots: int,
    max_seconds: float,
    rotate: int = 0,
) -> int:
    import pypdfium2.raw as pdfium_c

    deadline = time.monotonic() + max_seconds
    pause = pdfium_c.IFSDK_PAUSE(version=1)
    # Keep the ctypes callback referenced until PDFium is done with it.
    need_to_pause = type(pause.NeedToPauseNow)(lambda _pause: time.monotonic() > deadline)
    pause.NeedToPauseNow = need_to_pause
    try:
        status = pdfium_c.FPDF_RenderPageBitmap_Start(
            bitmap, raw_page, 0, 0, width_dots, height_dots, rotate, _render_flags(), pause
        )
        while status == pdfium_c.FPDF_RENDER_TOBECONTINUED and time.monotonic() <= deadline:
            status = pdfium_c.FPDF_RenderPage_Continue(raw_page, pause)
    finally:
        pdfium_c.FPDF_RenderPage_Close(raw_page)
    return int(status)


def _render_flags() -> int:
    import pypdfium2.raw as pdfium_c

    return (
        pdfium_c.FPDF_ANNOT  # filled-in form fields and stamps are part of the badge
        | pdfium_c.FPDF_PRINTING  # honour each annotation's print / no-print flag
        | pdfium_c.FPDF_GRAYSCALE
        # A dithered anti-aliased edge prints ragged: crisp text and lines, like
        # the printer's own fonts, read better and keep QR code modules square.
        | pdfium_c.FPDF_RENDER_NO_SMOOTHTEXT
        | pdfium_c.FPDF_RENDER_NO_SMOOTHPATH
    )


def _black_is_one(packed_white_is_one: bytes, width: int, row_bytes: int) -> bytes:
    inverted = packed_white_is_one.translate(_INVERT_BITS)
    spare_bits = row_bytes * 8 - width
    if not spare_bits:
        return inverted
    # Pillow pads each row with 0 bits, which inversion turns into black dots
    # past the right edge of the image: clear them.
    keep_mask = (0xFF << spare_bits) & 0xFF
    rows = bytearray(inverted)
    for last_byte in range(row_bytes - 1, len(rows), row_bytes):
        rows[last_byte] &= keep_mask
    return bytes(rows)


def _footer_line(footer: str) -> bytes:
    if not all(" " <= character <= "~" for character in footer):
        raise ValueError(f"footer must be printable ASCII without control codes: {footer!r}")
    return ALIGN_CENTER + footer.encode("ascii") + b"\n" + ALIGN_LEFT
