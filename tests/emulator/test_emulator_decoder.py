"""The ESC/POS decoder on its own: bytes in, status requests and cut pages out."""

from __future__ import annotations

import random

import pytest
from PIL import Image

from badgeline.emulator import Align, EscPosDecoder, PageCut, QrCode, StatusRequest
from badgeline.emulator.page import MAX_RASTER_WIDTH_DOTS
from tests.emulator.escpos_builders import (
    ESC_INIT,
    FULL_CUT,
    PARTIAL_CUT,
    badge_image,
    badge_job,
    barcode_settings,
    qr_code,
    raster_command,
    status_query,
)


def decode(*chunks: bytes) -> list[StatusRequest | PageCut]:
    decoder = EscPosDecoder()
    events: list[StatusRequest | PageCut] = []
    for chunk in chunks:
        events += decoder.feed(chunk)
    return events


def cuts(events: list[StatusRequest | PageCut]) -> list[PageCut]:
    return [event for event in events if isinstance(event, PageCut)]


def mixed_stream() -> bytes:
    """One of every kind of command the decoder handles, including skipped ones."""
    image = badge_image(64, 24)
    return b"".join(
        [
            ESC_INIT,
            status_query(1),
            b"\x1ba\x01\x1bE\x01\x1d!\x11Big name\n\x1bE\x00\x1d!\x00\x1ba\x00",
            b"\x1d(L\x06\x000p0\x01\x01\x01",  # GS ( L graphics, length-prefixed
            b"\x1d8L\x04\x00\x00\x000p\x10\x04",  # GS 8 L whose data holds 0x10 0x04
            raster_command(image),
            b"\x1b*\x00\x03\x00\xff\x10\x04",  # ESC * column image holding 0x10 0x04
            b"\x1dk\x02123456789012\x00",  # GS k EAN13, NUL-terminated
            b"\x1dkI\x05{B123",  # GS k CODE128, length-prefixed
            barcode_settings(height=50, module=2, hri=3, font=1),  # GS h, GS w, GS H, GS f
            qr_code(b"https://badgeline.example/\x10\x04", 4, "Q"),  # store data holds 0x10 0x04
            b"\x1d(k\x05\x00\x30\x50\x30\x10\x04\x1d(k\x03\x00\x30\x51\x30",  # PDF417
            b"\x1bJ\x20",  # ESC J: feed 32 dots
            b"\x1b&\x03\x41\x42\x02" + bytes(6) + b"\x01" + bytes(3),  # downloaded chars
            b"\x1bD\x08\x10\x00",  # tab stops, NUL-terminated
            b"\x1b\xfe\x1d\xfe",  # unknown ESC and GS commands
            b"Company\tLtd\r\n",
            status_query(4),
            b"job job_0001\n\x1bd\x03",
            FULL_CUT,
            b"\x1b!\x08second\n\x1bi",
            status_query(2),
            b"\x1dVA\x05",  # cut with no content: not a page
            b"\x10\x04\x07\x01",  # DLE EOT 7 a: extended status, not answered
        ]
    )


def test_given_every_command_kind_when_split_at_each_byte_boundary_then_events_are_the_same():
    # GIVEN a stream with every kind of command and its decoding in one piece
    stream = mixed_stream()
    whole = decode(stream)
    # WHEN the same stream arrives in two reads split at each possible boundary
    # THEN the events are identical, images included
    for boundary in range(len(stream) + 1):
        assert decode(stream[:boundary], stream[boundary:]) == whole, boundary


def test_given_a_stream_fed_one_byte_at_a_time_then_it_decodes_as_one_read():
    stream = mixed_stream()

    events = decode(*(stream[index : index + 1] for index in range(len(stream))))

    assert events == decode(stream)


def test_given_the_mixed_stream_then_status_requests_and_pages_come_out_in_order():
    events = decode(mixed_stream())

    kinds = [event.query if isinstance(event, StatusRequest) else "cut" for event in events]
    assert kinds == [1, 4, "cut", "cut", 2]
    first, second = cuts(events)
    assert first.page.text == ["Big name", "Company Ltd", "job job_0001", "", "", ""]
    assert first.partial is False
    assert len(first.page.rasters) == 1
    assert second.page.text == ["second"]
    assert second.partial is True


def test_given_the_mixed_stream_then_the_page_keeps_its_elements_in_arrival_order():
    decoder = EscPosDecoder()
    first = cuts(decoder.feed(mixed_stream()))[0].page

    kinds = [type(element).__name__ for element in first.elements]
    assert kinds == ["TextLine", "RasterBlock", "Barcode", "Barcode", "QrCode", "Feed",
                     "TextLine", "TextLine", "TextLine", "TextLine", "TextLine"]  # fmt: skip
    qr = next(element for element in first.elements if isinstance(element, QrCode))
    assert (qr.data, qr.module_dots, qr.error_correction) == (
        b"https://badgeline.example/\x10\x04", 4, "Q",
    )  # fmt: skip
    assert decoder.skipped_symbols == 1  # the PDF417


def test_given_styled_text_then_each_line_keeps_the_style_at_its_start():
    events = decode(
        ESC_INIT + b"\x1ba\x01\x1bE\x01\x1d!\x11Big name\n\x1bE\x00\x1ba2right\n" + FULL_CUT
    )

    big, right = cuts(events)[0].page.lines
    assert (big.style.align, big.style.bold, big.style.width_scale, big.style.height_scale) == (
        Align.CENTER, True, 2, 2,
    )  # fmt: skip
    assert (right.style.align, right.style.bold) == (Align.RIGHT, False)


@pytest.mark.parametrize("width", [384, 300, 8, 1])
def test_given_a_raster_image_then_it_decodes_pixel_for_pixel(width: int):
    # GIVEN a reference 1-bit image (widths not a multiple of 8 are padded by the sender)
    reference = badge_image(width, 50, seed=width)
    # WHEN it is sent as GS v 0 and cut
    page = cuts(decode(ESC_INIT + raster_command(reference) + FULL_CUT))[0].page
    # THEN the decoded image is the reference, and the padding is white
    decoded = page.raster()
    assert decoded is not None
    assert decoded.mode == "1"
    assert decoded.size == ((width + 7) // 8 * 8, 50)
    assert decoded.crop((0, 0, width, 50)).tobytes() == reference.tobytes()
    padding = decoded.crop((width, 0, decoded.width, 50))
    assert padding.width == 0 or padding.getextrema() == (255, 255)


def test_given_an_image_sent_in_bands_then_the_page_raster_is_the_whole_image():
    reference = badge_image(200, 130)
    bands = [reference.crop((0, top, 200, min(130, top + 64))) for top in range(0, 130, 64)]

    page = cuts(decode(b"".join(raster_command(band) for band in bands) + FULL_CUT))[0].page

    decoded = page.raster()
    assert decoded is not None
    assert len(page.rasters) == 3
    assert decoded.crop((0, 0, 200, 130)).tobytes() == reference.tobytes()


def test_given_python_escpos_output_then_the_badge_decodes():
    # GIVEN the bytes python-escpos (what the agent drives printers with) writes
    from escpos.printer import Dummy

    reference = badge_image(256, 90)
    printer = Dummy()
    printer.hw("INIT")
    printer.set(align="center", bold=True, double_height=True)
    printer.textln("Ada Lovelace")
    printer.set(align="left", bold=False, normal_textsize=True)
    printer.image(reference, impl="bitImageRaster", fragment_height=32)
    printer.textln("job escpos-1")
    printer.cut()
    # WHEN decoded
    (cut,) = cuts(decode(printer.output))
    # THEN text, footer and image all survive
    assert cut.page.text[:2] == ["Ada Lovelace", "job escpos-1"]
    decoded = cut.page.raster()
    assert decoded is not None
    assert decoded.crop((0, 0, 256, 90)).tobytes() == reference.tobytes()


def test_given_only_feeds_before_a_cut_then_no_page_is_cut():
    assert decode(ESC_INIT + b"\n\n   \n\x1bd\x05" + FULL_CUT + PARTIAL_CUT + b"\x1bm") == []


def test_given_text_without_a_final_line_feed_then_the_cut_prints_it():
    (cut,) = cuts(decode(b"job abcd\x1dV\x00"))

    assert cut.page.text == ["job abcd"]


def test_given_esc_init_mid_line_then_the_unprinted_line_is_dropped_but_the_page_is_not():
    (cut,) = cuts(decode(b"kept\nlost" + ESC_INIT + b"after\n" + FULL_CUT))

    assert cut.page.text == ["kept", "after"]


def test_given_a_status_request_inside_raster_data_then_it_is_image_data():
    image = Image.frombytes("1", (16, 1), b"\x10\x04", "raw", "1;I")

    events = decode(raster_command(image) + FULL_CUT)

    assert not any(isinstance(event, StatusRequest) for event in events)
    decoded = cuts(events)[0].page.raster()
    assert decoded is not None
    assert decoded.tobytes() == image.tobytes()


def test_given_an_over_wide_raster_then_it_is_skipped_by_length_and_decoding_goes_on():
    width_bytes = MAX_RASTER_WIDTH_DOTS // 8 + 1
    too_wide = b"\x1dv0\x00" + width_bytes.to_bytes(2, "little") + b"\x02\x00"

    (cut,) = cuts(decode(too_wide + b"\xff" * (width_bytes * 2) + b"after\n" + FULL_CUT))

    assert cut.page.rasters == []
    assert cut.page.text == ["after"]
    assert cut.page.truncated


def test_given_a_graphics_header_claiming_gigabytes_then_decoding_streams_past_it():
    decoder = EscPosDecoder()
    decoder.feed(b"\x1d8L\xff\xff\xff\xff")

    for _ in range(64):
        assert decoder.feed(b"\x1dV\x00" * 10_000) == []  # all swallowed as graphics data


@pytest.mark.parametrize("seed", range(20))
def test_given_random_bytes_then_the_decoder_never_raises(seed: int):
    generator = random.Random(seed)
    # Bias half the bytes towards command prefixes so parsers, not text, get the garbage.
    prefixes = b"\x1b\x1d\x10\x1c\x0a\x00"
    garbage = bytes(
        generator.choice(prefixes) if generator.random() < 0.5 else generator.randrange(256)
        for _ in range(20_000)
    )
    decoder = EscPosDecoder()
    position = 0
    while position < len(garbage):
        step = generator.randrange(1, 700)
        decoder.feed(garbage[position : position + step])
        position += step

    # THEN a clean job after resynchronising (a fresh connection) still decodes
    assert cuts(decode(badge_job("after-garbage")))[0].page.text[1] == "job after-garbage"
