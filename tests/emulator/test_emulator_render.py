"""The emulator's picture is the paper: elements in arrival order, real glyphs, codes that scan."""

from __future__ import annotations

import asyncio

from PIL import Image, ImageChops

from badgeline.badge.raster import badge_to_escpos, render_badge
from badgeline.emulator import EscPosDecoder, Page, PageCut, PrinterEmulator, TextLine, render_page
from badgeline.samples import sample_badge_pdf
from tests.emulator.escpos_builders import ESC_INIT, FULL_CUT
from tests.emulator.scanning import inked_rows, scan, solid_rows

PAPER_WIDTH = 576
QR_DATA = "https://badgeline.example/a/A-1001"
EAN13 = "4006381333931"
IMAGE_SIZE = (192, 48)  # a solid black block: no text, code or barcode has such long runs


def printed_count(count: int):
    return lambda printer: len(printer.printed) == count


def escpos_page(printer) -> None:
    """What a host using python-escpos prints: text, an image, a QR code and two barcodes."""
    printer.hw("INIT")
    printer.set(align="center")
    printer.textln("Grüße, Ada")
    printer.image(Image.new("1", IMAGE_SIZE, 0))
    # A QR code needs a quiet zone; the printer leaves none of its own: feed a line.
    printer.ln()
    printer.qr(QR_DATA, native=True, size=6, ec=1)  # ec 1: level M
    printer.ln()
    printer.barcode(EAN13, "EAN13")
    printer.barcode("{BBADGE-42", "CODE128", function_type="B")
    printer.cut()


def print_over_network(port: int) -> None:
    from escpos.printer import Network

    printer = Network("127.0.0.1", port=port, timeout=10)
    try:
        escpos_page(printer)
    finally:
        printer.close()


async def test_given_python_escpos_over_tcp_then_the_png_shows_each_element_in_arrival_order(
    emulator: PrinterEmulator,
):
    # GIVEN a host printing with python-escpos's Network printer
    # WHEN it sends text, an image, a native QR code, an EAN-13 and a CODE128 barcode
    await asyncio.to_thread(print_over_network, emulator.port)
    await emulator.wait_until(printed_count(1))
    # THEN the picture shows them top to bottom in that order, each centred as sent
    png = emulator.printed[0].png
    assert png is not None
    with Image.open(png) as picture:
        picture.load()
    assert picture.width == PAPER_WIDTH
    image_rows = solid_rows(picture, IMAGE_SIZE[0])
    assert len(image_rows) == IMAGE_SIZE[1]
    text_rows = [row for row in inked_rows(picture) if row < image_rows[0]]
    assert text_rows, "the text line is above the image"
    qr, ean, code128 = scan(picture)
    assert (qr.format, qr.text, qr.ec_level) == ("QR Code", QR_DATA, "M")
    assert (ean.format, ean.text) == ("EAN-13", EAN13)
    assert (code128.format, code128.text) == ("Code 128", "BADGE-42")
    assert text_rows[-1] < image_rows[0] <= image_rows[-1] < qr.top
    assert qr.bottom < ean.top <= ean.bottom < code128.top
    for code in (qr, ean, code128):
        assert abs((code.left + code.right) / 2 - PAPER_WIDTH / 2) <= 2, code
    # AND the text and the footer lines are still read from the page
    assert emulator.printed[0].text[0] == "Grüße, Ada"


def test_given_python_escpos_bytes_then_the_page_keeps_the_elements_in_order():
    from escpos.printer import Dummy

    printer = Dummy()
    escpos_page(printer)

    (cut,) = EscPosDecoder().feed(printer.output)

    assert isinstance(cut, PageCut)
    kinds = [type(element).__name__ for element in cut.page.elements if _not_blank(element)]
    assert kinds == ["TextLine", "RasterBlock", "QrCode", "Barcode", "Barcode"]


def _not_blank(element) -> bool:
    return not (isinstance(element, TextLine) and element.is_blank)


def cells(picture: Image.Image, count: int) -> list[Image.Image]:
    """The first `count` font A cells (12 x 24 dots) of a one-line picture."""
    return [
        picture.crop((12 * index, 0, 12 * index + 12, picture.height)) for index in range(count)
    ]


def same(first: Image.Image, second: Image.Image) -> bool:
    return ImageChops.difference(first.convert("L"), second.convert("L")).getbbox() is None


def test_given_cp437_text_then_every_character_is_drawn_as_its_glyph_not_a_box():
    # GIVEN "Grüße" and box drawing in code page 437 (ESC t 0), the printer's default
    text = "Grüße ─┼│╔"
    stream = ESC_INIT + b"\x1bt\x00" + text.encode("cp437") + b"\n" + FULL_CUT
    # WHEN decoded and drawn
    (cut,) = EscPosDecoder().feed(stream)
    assert isinstance(cut, PageCut)
    assert cut.page.text == [text]
    picture = render_page(cut.page)
    # THEN no character is drawn as the box of a character the font lacks
    missing = render_page(Page([TextLine("\ue000" * len(text))]))  # private use: no glyph
    for character, cell, box in zip(text, cells(picture, len(text)), cells(missing, len(text)),
                                    strict=True):  # fmt: skip
        if character != " ":
            assert cell.convert("L").getextrema()[0] == 0, f"{character!r} has ink"
            assert not same(cell, box), f"{character!r} is drawn as a box"
    # AND the umlaut is drawn: "ü" is not "u"
    plain = render_page(Page([TextLine("Gruse")]))
    assert not same(cells(picture, 3)[2], cells(plain, 3)[2])


def test_given_esc_j_and_esc_d_then_the_paper_feeds_between_lines():
    # GIVEN a line, a 100-dot feed (ESC J 100), a line, two line feeds (ESC d 2), a line
    stream = ESC_INIT + b"A\n\x1bJ\x64B\n\x1bd\x02C\n" + FULL_CUT
    # WHEN drawn
    (cut,) = EscPosDecoder().feed(stream)
    assert isinstance(cut, PageCut)
    picture = render_page(cut.page)
    # THEN each line starts where the feeds before it put it (a line is 34 dots)
    rows = inked_rows(picture)
    tops = [row for index, row in enumerate(rows) if index == 0 or rows[index - 1] != row - 1]
    assert len(tops) == 3
    assert tops[1] - tops[0] == 34 + 100
    assert tops[2] - tops[1] == 34 + 2 * 34


async def test_given_a_badge_from_the_agents_pipeline_then_it_renders_and_its_raster_matches(
    emulator: PrinterEmulator, connect
):
    # GIVEN the ESC/POS the agent prints a badge PDF with (render, dither, encode, footer)
    pdf = sample_badge_pdf("A-RENDER-1", "Grüße Lovelace", "Analytical Engines Ltd")
    escpos = await asyncio.to_thread(badge_to_escpos, pdf, PAPER_WIDTH, "job_render-0001")
    reference = await asyncio.to_thread(render_badge, pdf, PAPER_WIDTH)
    client = await connect()
    # WHEN it is printed
    await client.send(escpos)
    await emulator.wait_until(printed_count(1))
    # THEN the recorded raster is the agent's image, dot for dot, with its job id
    (badge,) = emulator.printed
    assert badge.job_id == "job_render-0001"
    assert badge.raster is not None
    assert badge.raster.tobytes() == reference.tobytes()
    # AND the picture shows that image at the top, with the footer below it
    assert badge.png is not None
    with Image.open(badge.png) as png:
        picture = png.convert("1")
    # (the badge's own white margin is above its first black row)
    raster_top = inked_rows(picture)[0] - inked_rows(reference)[0]
    window = picture.crop((0, raster_top, PAPER_WIDTH, raster_top + reference.height))
    assert same(window, reference)
    footer = [row for row in inked_rows(picture) if row >= raster_top + reference.height]
    assert footer, "the job footer is printed below the badge"
