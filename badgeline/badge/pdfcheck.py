"""Check a badge PDF, held in memory, before anything prints it.

A badge PDF comes from outside the agent (a kiosk, a registration system),
so every check here bounds work first and decides second: size and magic
bytes before parsing, decompressed size before PDFium parses, page geometry
before a bitmap is allocated, object counts before a render. Each refusal is
a `BadgeRejected` with a reason code for machines and a message for people.

pypdfium2 is imported inside the functions: it costs ~0.1 s and several MB,
and the agent's start-up time and idle memory matter more than the first
badge's latency.
"""

from __future__ import annotations

import ctypes
import math
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from badgeline.badge.errors import BadgeRejected, RejectReason
from badgeline.badge.limits import DEFAULT_LIMITS, BadgeLimits
from badgeline.badge.streamscan import check_stream_expansion

if TYPE_CHECKING:
    import pypdfium2

PDF_MAGIC = b"%PDF-"
_MM_PER_POINT = 25.4 / 72
# PDFium is not thread-safe and the agent calls us from `asyncio.to_thread`
# workers (it rasterises the next badge while the current one prints).
PDFIUM_LOCK = threading.Lock()


def check_badge_pdf(pdf_bytes: bytes, limits: BadgeLimits = DEFAULT_LIMITS) -> None:
    """Raise `BadgeRejected` if `pdf_bytes` must not be printed; return None if it may."""
    with open_checked_first_page(pdf_bytes, limits):
        pass


@contextmanager
def open_checked_first_page(
    pdf_bytes: bytes, limits: BadgeLimits = DEFAULT_LIMITS
) -> Iterator[pypdfium2.PdfPage]:
    """Yield page 1 of a PDF that passed every check, holding `PDFIUM_LOCK` throughout."""
    _check_container(pdf_bytes, limits)
    import pypdfium2

    with PDFIUM_LOCK:
        document = _open_document(pypdfium2, pdf_bytes)
        try:
            _check_document(document, limits)
            page = _load_first_page(pypdfium2, document)
            try:
                _PageInspector(limits).inspect(page)
                yield page
            finally:
                page.close()
        finally:
            document.close()


def _check_container(pdf_bytes: bytes, limits: BadgeLimits) -> None:
    if len(pdf_bytes) > limits.max_bytes:
        raise BadgeRejected(
            RejectReason.TOO_LARGE,
            f"The badge PDF is {_mib(len(pdf_bytes))} MiB; the limit is "
            f"{_mib(limits.max_bytes)} MiB. Re-export it with smaller images.",
        )
    # Readers tolerate junk before the header; a badge generator writes none,
    # and anything else is most likely an error page saved under a .pdf name.
    if not pdf_bytes.startswith(PDF_MAGIC):
        raise BadgeRejected(
            RejectReason.NOT_A_PDF,
            # Not a byte of it quoted: whatever the reference named (a login page, a
            # file of the Pi's) must not reach the kiosk that reads this back.
            "The badge file is not a PDF (it does not start with %PDF-). Check the badge"
            " link points at the PDF itself.",
        )
    check_stream_expansion(
        pdf_bytes,
        max_decoded_bytes=limits.max_decoded_bytes,
        max_streams=limits.max_streams,
    )


def _open_document(pypdfium2: Any, pdf_bytes: bytes) -> pypdfium2.PdfDocument:
    import pypdfium2.raw as pdfium_c

    try:
        return pypdfium2.PdfDocument(bytes(pdf_bytes))
    except pypdfium2.PdfiumError as error:
        if error.err_code in (pdfium_c.FPDF_ERR_PASSWORD, pdfium_c.FPDF_ERR_SECURITY):
            raise _encrypted() from None
        raise BadgeRejected(
            RejectReason.MALFORMED,
            "The badge PDF is damaged or unreadable. Re-export it and submit it again.",
        ) from None


def _load_first_page(pypdfium2: Any, document: pypdfium2.PdfDocument) -> pypdfium2.PdfPage:
    try:
        return document[0]
    except pypdfium2.PdfiumError:
        raise BadgeRejected(
            RejectReason.MALFORMED, "The badge PDF's first page is damaged or unreadable."
        ) from None


def _encrypted() -> BadgeRejected:
    return BadgeRejected(
        RejectReason.ENCRYPTED,
        "The badge PDF is encrypted or password-protected. Export it without a password.",
    )


def _check_document(document: pypdfium2.PdfDocument, limits: BadgeLimits) -> None:
    import pypdfium2.raw as pdfium_c

    # A file with only an owner password opens without one: still refuse it,
    # since its permissions may forbid printing and it hides its streams.
    if pdfium_c.FPDF_GetSecurityHandlerRevision(document.raw) != -1:
        raise _encrypted()
    page_count = len(document)
    if page_count > limits.max_pages:
        raise BadgeRejected(
            RejectReason.TOO_MANY_PAGES,
            f"The badge PDF has {page_count} pages; at most {limits.max_pages} are accepted "
            "and only the first is printed. Send the single badge page.",
        )
    size = pdfium_c.FS_SIZEF()
    if not pdfium_c.FPDF_GetPageSizeByIndexF(document.raw, 0, size):
        raise BadgeRejected(RejectReason.MALFORMED, "The badge PDF's first page is unreadable.")
    _check_page_size(size.width * _MM_PER_POINT, size.height * _MM_PER_POINT, limits)


def _check_page_size(width_mm: float, height_mm: float, limits: BadgeLimits) -> None:
    shown = f"{width_mm:.0f} mm x {height_mm:.0f} mm"
    if not (math.isfinite(width_mm) and math.isfinite(height_mm)):
        raise BadgeRejected(RejectReason.MALFORMED, "The badge PDF's page size is not a number.")
    if max(width_mm, height_mm) > limits.max_page_side_mm:
        raise BadgeRejected(
            RejectReason.PAGE_SIZE,
            f"The badge page is {shown}; no side may exceed {limits.max_page_side_mm:.0f} mm. "
            "Export the badge at its real size (about 80 mm x 100 mm).",
        )
    if min(width_mm, height_mm) < limits.min_page_side_mm:
        raise BadgeRejected(
            RejectReason.PAGE_SIZE,
            f"The badge page is {shown}; each side must be at least "
            f"{limits.min_page_side_mm:.0f} mm.",
        )
    if max(width_mm, height_mm) / min(width_mm, height_mm) > limits.max_aspect_ratio:
        raise BadgeRejected(
            RejectReason.PAGE_SIZE,
            f"The badge page is {shown}, too long and thin to print as one badge.",
        )


def _mib(count: int) -> str:
    return f"{count / (1024 * 1024):.1f}"


class _PageInspector:
    """Walks page 1's objects (into forms and annotation appearances) with a bounded count."""

    def __init__(self, limits: BadgeLimits) -> None:
        self.limits = limits
        self.objects_seen = 0

    def inspect(self, page: pypdfium2.PdfPage) -> None:
        import pypdfium2.raw as pdfium_c

        self._inspect_children(
            pdfium_c.FPDFPage_CountObjects, pdfium_c.FPDFPage_GetObject, page.raw, depth=0
        )
        self._inspect_annotations(page.raw)

    def _inspect_annotations(self, raw_page: Any) -> None:
        import pypdfium2.raw as pdfium_c

        annotation_count = pdfium_c.FPDFPage_GetAnnotCount(raw_page)
        if annotation_count > self.limits.max_annotations:
            raise _too_complex(f"{annotation_count} annotations")
        for index in range(max(annotation_count, 0)):
            annotation = pdfium_c.FPDFPage_GetAnnot(raw_page, index)
            if not annotation:
                continue
            try:
                self._inspect_children(
                    pdfium_c.FPDFAnnot_GetObjectCount,
                    pdfium_c.FPDFAnnot_GetObject,
                    annotation,
                    depth=0,
                )
            finally:
                pdfium_c.FPDFPage_CloseAnnot(annotation)

    def _inspect_children(
        self,
        count_children: Callable[..., int],
        get_child: Callable[..., Any],
        parent: Any,
        depth: int,
    ) -> None:
        child_count = count_children(parent)
        if child_count < 0:
            raise BadgeRejected(RejectReason.MALFORMED, "The badge PDF's page is unreadable.")
        for index in range(child_count):
            child = get_child(parent, index)
            if child:
                self._inspect_object(child, depth)

    def _inspect_object(self, page_object: Any, depth: int) -> None:
        import pypdfium2.raw as pdfium_c

        self.objects_seen += 1
        if self.objects_seen > self.limits.max_page_objects:
            raise _too_complex(f"more than {self.limits.max_page_objects} drawing objects")
        kind = pdfium_c.FPDFPageObj_GetType(page_object)
        if kind == pdfium_c.FPDF_PAGEOBJ_TEXT:
            _require_embedded_font(page_object)
        elif kind == pdfium_c.FPDF_PAGEOBJ_IMAGE:
            self._require_modest_image(page_object)
        elif kind == pdfium_c.FPDF_PAGEOBJ_FORM:
            if depth >= self.limits.max_form_depth:
                raise _too_complex(f"forms nested more than {self.limits.max_form_depth} deep")
            self._inspect_children(
                pdfium_c.FPDFFormObj_CountObjects,
                pdfium_c.FPDFFormObj_GetObject,
                page_object,
                depth + 1,
            )

    def _require_modest_image(self, image_object: Any) -> None:
        # Images decode at render time, after every other bound: their declared
        # size is what bounds the decoder's work and memory.
        import pypdfium2.raw as pdfium_c

        width, height = ctypes.c_uint(), ctypes.c_uint()
        if not pdfium_c.FPDFImageObj_GetImagePixelSize(image_object, width, height):
            return  # PDFium skips images it cannot size, so they cost nothing
        if width.value * height.value > self.limits.max_image_pixels:
            raise _too_complex(
                f"an image of {width.value} x {height.value} pixels "
                f"(limit {self.limits.max_image_pixels // 1_000_000} megapixels)"
            )


def _require_embedded_font(text_object: Any) -> None:
    import pypdfium2.raw as pdfium_c

    font = pdfium_c.FPDFTextObj_GetFont(text_object)
    if not font:
        raise BadgeRejected(RejectReason.MALFORMED, "The badge PDF has text without a font.")
    # Without the font program the agent's PDFium substitutes whatever it has,
    # and a Pi has no fonts: names would print in the wrong shapes or not at all.
    if pdfium_c.FPDFFont_GetIsEmbedded(font) != 1:
        raise BadgeRejected(
            RejectReason.FONT_NOT_EMBEDDED,
            f"The badge PDF uses the font {_font_name(font)!r} without embedding it, so it "
            "would print in a substitute font. Re-export the PDF with all fonts embedded.",
        )


# What a font's name may show of itself in a refusal (PostScript names are at most
# 127 characters of letters, digits and a little punctuation; real ones far shorter).
_UNSAFE_IN_FONT_NAME = re.compile(r"[^A-Za-z0-9+._-]")
MAX_FONT_NAME = 48


def _font_name(font: Any) -> str:
    import pypdfium2.raw as pdfium_c

    needed = pdfium_c.FPDFFont_GetBaseFontName(font, None, 0)
    if needed <= 0:
        return "unnamed"
    buffer = ctypes.create_string_buffer(needed)
    pdfium_c.FPDFFont_GetBaseFontName(font, buffer, needed)
    # The name comes from the PDF, and the message goes back to the kiosk (a job's
    # last_error): only a PostScript name's own characters, and not many of them.
    name = _UNSAFE_IN_FONT_NAME.sub("", buffer.value.decode("ascii", errors="ignore"))
    if len(name) > MAX_FONT_NAME:
        name = name[:MAX_FONT_NAME] + "…"
    return name or "unnamed"


def _too_complex(what: str) -> BadgeRejected:
    return BadgeRejected(
        RejectReason.TOO_COMPLEX,
        f"The badge PDF's first page has {what}; that is too complex to print as a badge. "
        "Simplify or flatten it and export again.",
    )
