"""Sample badge PDFs for the demo and the tests, good ones and hostile ones.

A good badge is 80 mm x 100 mm with the attendee's name, company and a QR
code of the attendee id, and its font embedded: the agent refuses PDFs that
rely on the printer host's fonts, and a Pi has none. The font is DejaVu Sans
Mono from python-barcode's package data (a dependency of python-escpos, so
every agent install has it): no font file lives in this repository and the
demo needs no system fonts.

Run `python -m badgeline.samples DIR` to write every sample into DIR.
"""

from __future__ import annotations

import sys
import zlib
from collections.abc import Callable, Iterable
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fpdf import FPDF

BADGE_WIDTH_MM = 80.0
BADGE_HEIGHT_MM = 100.0
_BADGE_SIZE_MM = (BADGE_WIDTH_MM, BADGE_HEIGHT_MM)
FONT_FAMILY = "DejaVuSansMono"
_FONT_PACKAGE = "barcode"  # python-barcode
_FONT_RESOURCE = "fonts/DejaVuSansMono.ttf"
_QR_SIDE_MM = 44.0


def badge_font_path() -> Path:
    """The TTF embedded in sample badges, found in an installed package, never on the system."""
    font = resources.files(_FONT_PACKAGE).joinpath(_FONT_RESOURCE)
    if not font.is_file():
        raise FileNotFoundError(f"python-barcode does not ship {_FONT_RESOURCE} any more")
    return Path(str(font))


def sample_badge_pdf(
    attendee_id: str = "A-1001",
    name: str = "Ada Lovelace",
    company: str = "Analytical Engines Ltd",
) -> bytes:
    """A printable badge: name, company, QR code of `attendee_id`, font embedded."""
    pdf = _badge_document()
    _draw_badge(pdf, attendee_id, name, company)
    return bytes(pdf.output())


def many_pages_badge_pdf(pages: int = 50) -> bytes:
    """A well-formed badge PDF with `pages` pages: the agent prints one badge, not a batch."""
    pdf = _badge_document()
    for number in range(1, pages + 1):
        _draw_badge(pdf, f"A-{number:04d}", f"Attendee {number}", "Batch Export Inc")
    return bytes(pdf.output())


def core_font_badge_pdf() -> bytes:
    """A badge in Helvetica, a core PDF font that is never embedded."""
    from fpdf import FPDF

    pdf = FPDF(unit="mm", format=(BADGE_WIDTH_MM, BADGE_HEIGHT_MM))
    pdf.set_auto_page_break(False)
    pdf.add_page()
    pdf.set_font("Helvetica", size=20)
    pdf.set_xy(0, 20)
    pdf.cell(BADGE_WIDTH_MM, 10, "Ada Lovelace", align="C")
    return bytes(pdf.output())


def encrypted_badge_pdf(user_password: str | None = "letmein") -> bytes:
    """A badge encrypted with RC4; with `user_password=None` it opens without a password."""
    pdf = _badge_document()
    pdf.set_encryption(owner_password="organiser-only", user_password=user_password)
    _draw_badge(pdf, "A-1001", "Ada Lovelace", "Analytical Engines Ltd")
    return bytes(pdf.output())


def oversized_badge_pdf(size_bytes: int = 6 * 1024 * 1024) -> bytes:
    """A valid badge padded with a trailing PDF comment to `size_bytes`."""
    badge = sample_badge_pdf()
    padding = max(0, size_bytes - len(badge) - 2)
    return badge + b"%" + b"x" * padding + b"\n"


def giant_page_pdf(side_mm: float = 1200.0) -> bytes:
    """A one-page PDF whose page is `side_mm` square, far beyond any badge."""
    pdf = _badge_document(width_mm=side_mm, height_mm=side_mm)
    _draw_badge(pdf, "A-1001", "Ada Lovelace", "Analytical Engines Ltd")
    return bytes(pdf.output())


def not_a_pdf() -> bytes:
    """What a badge link returns when it points at a login page instead of the PDF."""
    return b"<!doctype html><html><body><h1>Session expired</h1></body></html>\n"


def malformed_pdf() -> bytes:
    """A PDF header followed by noise: no objects, no cross-reference table."""
    return b"%PDF-1.7\n" + bytes(range(256)) * 8


def decompression_bomb_pdf(decoded_bytes: int = 256 * 1024 * 1024, layers: int = 2) -> bytes:
    """A page whose content stream inflates to `decoded_bytes` of spaces.

    Each extra layer wraps the stream in another FlateDecode, which is how a
    PDF of a few kilobytes expands to gigabytes.
    """
    compressor = zlib.compressobj(9)
    block = b" " * (1024 * 1024)
    chunks = [compressor.compress(block) for _ in range(decoded_bytes // len(block))]
    stream = b"".join(chunks) + compressor.flush()
    for _ in range(layers - 1):
        stream = zlib.compress(stream, 9)
    filters = b"[" + b" /FlateDecode" * layers + b" ]"
    return hand_built_pdf(stream, b"/Filter " + filters)


def legacy_lzw_pdf() -> bytes:
    """A page whose (empty) content claims LZW compression, a filter the agent refuses."""
    return hand_built_pdf(b"\x80\x0b\x60\x50\x22\x0c\x0c\x85\x01", b"/Filter /LZWDecode")


def hand_built_pdf(
    content_stream: bytes,
    stream_dictionary_extra: bytes = b"",
    *,
    page_resources: bytes = b"<< >>",
    extra_objects: Iterable[bytes] = (),
) -> bytes:
    """A one-page 80 x 100 mm PDF around a raw content stream, for shapes fpdf2 will not write.

    Objects 1 to 4 are the catalog, page tree, page and content stream;
    `extra_objects` are numbered from 5 for `page_resources` to refer to.
    """
    width_points, height_points = (round(side / 25.4 * 72) for side in _BADGE_SIZE_MM)
    page_box = b"[0 0 %d %d]" % (width_points, height_points)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox %s /Contents 4 0 R /Resources %s >>"
        % (page_box, page_resources),
        b"<< /Length %d %s >>\nstream\n" % (len(content_stream), stream_dictionary_extra)
        + content_stream
        + b"\nendstream",
        *extra_objects,
    ]
    return _assemble_pdf(objects)


def _assemble_pdf(objects: list[bytes]) -> bytes:
    output = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(output))
        output += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref_offset = len(output)
    output += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        output += b"%010d 00000 n \n" % offset
    output += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref_offset,
    )
    return bytes(output)


def _badge_document(width_mm: float = BADGE_WIDTH_MM, height_mm: float = BADGE_HEIGHT_MM) -> FPDF:
    from fpdf import FPDF

    pdf = FPDF(unit="mm", format=(width_mm, height_mm))
    pdf.set_margin(0)
    pdf.set_auto_page_break(False)
    pdf.set_creator("badgeline samples")
    pdf.add_font(FONT_FAMILY, fname=badge_font_path())
    return pdf


def _draw_badge(pdf: FPDF, attendee_id: str, name: str, company: str) -> None:
    pdf.add_page()
    width = pdf.w
    pdf.set_font(FONT_FAMILY, size=_fitting_font_size(pdf, name, width - 8, start=22))
    pdf.set_xy(0, 12)
    pdf.cell(width, 12, name, align="C")
    pdf.set_font(FONT_FAMILY, size=_fitting_font_size(pdf, company, width - 8, start=13))
    pdf.set_xy(0, 26)
    pdf.cell(width, 8, company, align="C")
    _draw_qr_code(pdf, attendee_id, left_mm=(width - _QR_SIDE_MM) / 2, top_mm=40)
    pdf.set_font(FONT_FAMILY, size=9)
    pdf.set_xy(0, 40 + _QR_SIDE_MM + 3)
    pdf.cell(width, 5, attendee_id, align="C")


def _fitting_font_size(pdf: FPDF, text: str, width_mm: float, start: float) -> float:
    size = start
    while size > 6:
        pdf.set_font(FONT_FAMILY, size=size)
        if pdf.get_string_width(text) <= width_mm:
            break
        size -= 1
    return size


def _draw_qr_code(pdf: FPDF, payload: str, left_mm: float, top_mm: float) -> None:
    """Draw the QR code as filled rectangles: vectors stay sharp at any printer resolution."""
    import qrcode

    code = qrcode.QRCode(border=0, error_correction=qrcode.constants.ERROR_CORRECT_M)
    code.add_data(payload)
    code.make(fit=True)
    matrix = code.get_matrix()
    module_mm = _QR_SIDE_MM / len(matrix)
    pdf.set_fill_color(0)
    for row_index, row in enumerate(matrix):
        for start, length in _dark_runs(row):
            pdf.rect(
                left_mm + start * module_mm,
                top_mm + row_index * module_mm,
                length * module_mm,
                module_mm,
                style="F",
            )


def _dark_runs(row: Iterable[bool]) -> list[tuple[int, int]]:
    """(start, length) of each run of dark modules: one rectangle per run, not per module."""
    runs: list[tuple[int, int]] = []
    run_start: int | None = None
    cells = [*row, False]
    for index, dark in enumerate(cells):
        if dark and run_start is None:
            run_start = index
        elif not dark and run_start is not None:
            runs.append((run_start, index - run_start))
            run_start = None
    return runs


SAMPLES: dict[str, Callable[[], bytes]] = {
    "badge-ada.pdf": sample_badge_pdf,
    "badge-grace.pdf": lambda: sample_badge_pdf("A-1002", "Grace Hopper", "Compilers & Co"),
    "hostile-not-a-pdf.pdf": not_a_pdf,
    "hostile-encrypted.pdf": encrypted_badge_pdf,
    "hostile-core-font.pdf": core_font_badge_pdf,
    "hostile-oversized.pdf": oversized_badge_pdf,
    "hostile-50-pages.pdf": many_pages_badge_pdf,
    "hostile-giant-page.pdf": giant_page_pdf,
    "hostile-malformed.pdf": malformed_pdf,
    "hostile-decompression-bomb.pdf": decompression_bomb_pdf,
}


def write_samples(directory: Path) -> list[Path]:
    """Write every sample into `directory`; return the paths written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for file_name, make in SAMPLES.items():
        path = directory / file_name
        path.write_bytes(make())
        written.append(path)
    return written


if __name__ == "__main__":
    for written_path in write_samples(Path(sys.argv[1] if len(sys.argv) > 1 else "samples")):
        print(written_path)
