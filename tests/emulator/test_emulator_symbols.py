"""QR codes (GS ( k) and barcodes (GS k) as the printer draws them, read back by zxing-cpp."""

from __future__ import annotations

import pytest
from PIL import Image

from badgeline.emulator import Barcode, EscPosDecoder, PageCut, QrCode, TextLine, render_page
from tests.emulator.escpos_builders import (
    ESC_INIT,
    FULL_CUT,
    barcode_counted,
    barcode_nul,
    barcode_settings,
    qr_code,
)
from tests.emulator.scanning import inked_rows, scan

CENTER = b"\x1ba\x01"


def printed(*commands: bytes) -> tuple[Image.Image | None, EscPosDecoder, list[PageCut]]:
    """Feed one page (init, commands, cut) to a decoder: its picture, the decoder, its cuts."""
    decoder = EscPosDecoder()
    events = decoder.feed(ESC_INIT + b"".join(commands) + FULL_CUT)
    cuts = [event for event in events if isinstance(event, PageCut)]
    return (render_page(cuts[0].page) if cuts else None), decoder, cuts


def only_code(picture: Image.Image | None):
    assert picture is not None
    codes = scan(picture)
    assert len(codes) == 1, codes
    return codes[0]


@pytest.mark.parametrize(("module", "level"), [(3, "L"), (5, "M"), (6, "Q"), (8, "H")])
def test_given_a_qr_code_then_it_scans_at_the_module_size_and_level_sent(module: int, level: str):
    # GIVEN a QR code of a badge URL at a module size and error correction level
    data = "https://badgeline.example/a/A-1001?event=42"
    # WHEN it is stored and printed (GS ( k functions 165, 167, 169, 180, 181)
    picture, _, _ = printed(CENTER, qr_code(data.encode(), module, level))
    # THEN an independent decoder reads the data back at that level
    code = only_code(picture)
    assert (code.format, code.text, code.ec_level) == ("QR Code", data, level)
    # AND each module is `module` dots: the finder pattern's top edge is 7 modules wide
    assert picture is not None
    top_row = picture.convert("L").crop((0, code.top, picture.width, code.top + 1)).tobytes()
    first_black = top_row.index(b"\x00")
    assert top_row[first_black : first_black + 7 * module] == b"\x00" * (7 * module)
    assert top_row[first_black + 7 * module] == 255


def test_given_a_qr_print_with_nothing_stored_then_nothing_is_drawn_and_it_is_counted():
    print_only = b"\x1d(k\x03\x00\x31\x51\x30"

    _, decoder, cuts = printed(print_only, b"after\n")

    assert [type(element) for element in cuts[0].page.elements] == [TextLine]
    assert decoder.skipped_symbols == 1


@pytest.mark.parametrize("model", [1, 3])
def test_given_a_model_1_or_micro_qr_code_then_it_is_not_drawn_but_counted(model: int):
    _, decoder, cuts = printed(qr_code(b"A-1001", model=model), b"after\n")

    assert cuts[0].page.text == ["after"]
    assert decoder.skipped_symbols == 1


def test_given_more_qr_data_than_any_qr_code_holds_then_it_is_skipped_by_length():
    too_much = b"\x1d(k" + (7090 + 3).to_bytes(2, "little") + b"\x31\x50\x30" + b"9" * 7090

    _, decoder, cuts = printed(too_much + b"\x1d(k\x03\x00\x31\x51\x30", b"after\n")

    assert cuts[0].page.text == ["after"]
    assert decoder.skipped_symbols == 1
    assert decoder.unknown_commands == 0


@pytest.mark.parametrize("size", [1274, 3000])
def test_given_more_data_than_a_qr_code_holds_at_level_h_then_the_page_prints_without_it(size: int):
    # GIVEN byte data beyond level H's largest symbol (1273 bytes), a URL line after it
    data = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    # WHEN printed
    picture, _, cuts = printed(qr_code(data, 4, "H"), b"https://badgeline.example\n")
    # THEN the page is drawn with its text and no QR code
    assert picture is not None
    assert [type(element) for element in cuts[0].page.elements] == [QrCode, TextLine]
    assert scan(picture) == []
    assert inked_rows(picture)


def test_given_more_symbols_than_a_page_allows_then_the_page_is_marked_truncated():
    many = barcode_nul(2, b"400638133393") * 100

    _, _, cuts = printed(many)

    assert sum(isinstance(element, Barcode) for element in cuts[0].page.elements) == 64
    assert cuts[0].page.truncated


def test_given_a_pdf417_symbol_then_it_is_skipped_by_length_and_counted():
    # GS ( k cn 48: PDF417 store (fn 80) and print (fn 81), a family the emulator does not draw
    store = b"\x1d(k\x0b\x00\x30\x50\x30" + b"\x1d(k\x1b@" + b"\x10\x04\x01"
    print_symbol = b"\x1d(k\x03\x00\x30\x51\x30"

    _, decoder, cuts = printed(store, print_symbol, b"after\n")

    assert cuts[0].page.text == ["after"]
    assert decoder.skipped_symbols == 1
    assert decoder.unknown_commands == 0


@pytest.mark.parametrize(
    ("command", "format_", "text"),
    [
        (barcode_nul(2, b"400638133393"), "EAN-13", "4006381333931"),  # check digit added
        (barcode_counted(67, b"4006381333931"), "EAN-13", "4006381333931"),
        # UPC-A is EAN-13 with a leading 0: zxing-cpp reads it so
        (barcode_nul(0, b"03600029145"), "EAN-13", "0036000291452"),
        (barcode_nul(3, b"9638507"), "EAN-8", "96385074"),
        (barcode_nul(4, b"BADGE-42"), "Code 39", "BADGE-42"),
        (barcode_counted(69, b"*A 1$*"), "Code 39", "A 1$"),
        (barcode_counted(73, b"{BBADGE-42"), "Code 128", "BADGE-42"),
        (barcode_counted(73, b"{C" + bytes([12, 34, 56, 7])), "Code 128", "12345607"),
        (barcode_counted(73, b"{Bid{C" + bytes([20, 26])), "Code 128", "id2026"),
        (barcode_counted(73, b"{Ba{{b"), "Code 128", "a{b"),
        (barcode_counted(73, b"{AAB{S" + b"c"), "Code 128", "ABc"),
    ],
)
def test_given_a_barcode_then_it_scans_as_its_data(command: bytes, format_: str, text: str):
    # GIVEN a barcode in one of the systems the emulator draws, in either GS k form
    # WHEN it is printed centred
    picture, decoder, _ = printed(CENTER, barcode_settings(), command)
    # THEN an independent decoder reads the same data back
    code = only_code(picture)
    assert (code.format, code.text) == (format_, text)
    assert decoder.skipped_symbols == 0


def bars_box(picture: Image.Image) -> tuple[int, int, int, int]:
    """Left, top, right, bottom of the bars (the widest inked rows)."""
    gray = picture.convert("L")
    rows = {}
    for y in inked_rows(picture):
        row = gray.crop((0, y, gray.width, y + 1)).tobytes()
        rows[y] = (row.index(b"\x00"), len(row) - row[::-1].index(b"\x00"))
    widest = max(right - left for left, right in rows.values())
    bar_rows = [y for y, (left, right) in rows.items() if right - left == widest]
    left, right = rows[bar_rows[0]]
    return left, bar_rows[0], right, bar_rows[-1] + 1


@pytest.mark.parametrize(("height", "module"), [(40, 2), (120, 3), (200, 4)])
def test_given_gs_h_and_gs_w_then_the_bars_have_that_height_and_module_width(
    height: int, module: int
):
    picture, _, _ = printed(
        barcode_settings(height, module, hri=0), barcode_nul(2, b"400638133393")
    )

    assert picture is not None
    left, top, right, bottom = bars_box(picture)
    assert bottom - top == height
    assert right - left == 95 * module  # EAN-13: 95 modules
    assert only_code(picture).text == "4006381333931"


@pytest.mark.parametrize(("hri", "above", "below"), [(0, False, False), (1, True, False),
                                                     (2, False, True), (3, True, True),
                                                     (50, False, True)])  # fmt: skip
def test_given_gs_h_hri_position_then_the_digits_print_above_below_or_not(
    hri: int, above: bool, below: bool
):
    picture, _, cuts = printed(barcode_settings(60, 2, hri), barcode_nul(2, b"400638133393"))

    assert picture is not None
    (barcode,) = [element for element in cuts[0].page.elements if isinstance(element, Barcode)]
    assert barcode.hri == "4006381333931"
    _, top, _, bottom = bars_box(picture)
    ink = inked_rows(picture)
    assert any(row < top for row in ink) is above
    assert any(row >= bottom for row in ink) is below


def test_given_gs_f_font_b_then_the_hri_is_printed_smaller():
    def hri_height(font: int) -> int:
        picture, _, _ = printed(barcode_settings(60, 2, 2, font), barcode_nul(2, b"400638133393"))
        assert picture is not None
        _, _, _, bottom = bars_box(picture)
        below = [row for row in inked_rows(picture) if row >= bottom]
        return below[-1] - below[0] + 1

    assert hri_height(1) < hri_height(0) <= 24


def test_given_a_wrong_ean_check_digit_then_no_barcode_is_drawn_and_it_is_counted():
    _, decoder, cuts = printed(barcode_nul(2, b"4006381333932"), b"after\n")

    assert cuts[0].page.text == ["after"]
    assert decoder.skipped_symbols == 1


def test_given_a_barcode_mid_line_then_the_line_prints_before_it():
    _, _, cuts = printed(b"Name: ", barcode_nul(2, b"400638133393"), b"after\n")

    kinds = [type(element) for element in cuts[0].page.elements]
    assert kinds == [TextLine, Barcode, TextLine]
    assert cuts[0].page.text == ["Name: ", "after"]


def test_given_esc_init_then_symbol_settings_return_to_their_defaults():
    # GIVEN a QR module size and barcode settings, then ESC @
    settings = b"\x1d(k\x03\x00\x31\x43\x08" + barcode_settings(40, 2, 2, 1)
    store = b"\x1d(k\x09\x00\x31\x50\x30A-1001"
    print_qr = b"\x1d(k\x03\x00\x31\x51\x30"
    # WHEN a QR code and a barcode print after it
    _, _, cuts = printed(settings, ESC_INIT, store, print_qr, barcode_nul(2, b"400638133393"))
    # THEN they print with Epson's defaults: module 3, level L; bars 162 dots, no HRI
    qr, barcode = [e for e in cuts[0].page.elements if isinstance(e, QrCode | Barcode)]
    assert isinstance(qr, QrCode) and isinstance(barcode, Barcode)
    assert (qr.module_dots, qr.error_correction) == (3, "L")
    assert (barcode.height, barcode.hri_above, barcode.hri_below) == (162, False, False)
    assert barcode.width == 95 * 3
