"""Brother QL raster decoding of known bytes, built here from the Raster Command Reference."""

from __future__ import annotations

import random

import pytest

from badgeline.emulator.brother_ql import MODELS, BrotherQlDecoder, StatusInformationRequest
from badgeline.emulator.language import LabelCut
from badgeline.emulator.media import Media
from badgeline.emulator.state import PrinterCondition

INVALIDATE = b"\x00" * 400
INITIALIZE = b"\x1b@"
RASTER_MODE = b"\x1bia\x01"
STATUS_REQUEST = b"\x1biS"
COMPRESSION = b"M\x02"
ZERO_LINE = b"Z"
PRINT_LAST = b"\x1a"
LINE_BYTES = 90  # QL-800 series: 720 pins


def print_information(width_mm: int, length_mm: int, lines: int, die_cut: bool = False) -> bytes:
    valid = 0x80 | 0x40 | 0x02 | 0x04 | 0x08
    kind = 0x0B if die_cut else 0x0A
    return b"\x1biz" + bytes([valid, kind, width_mm, length_mm]) + lines.to_bytes(4, "little") + (
        b"\x00\x00"
    )  # fmt: skip


def pins(*numbers: int) -> bytes:
    """A raster line with these pins set (pin 0 is the first bit sent)."""
    line = bytearray(LINE_BYTES)
    for pin in numbers:
        line[pin // 8] |= 0x80 >> (pin % 8)
    return bytes(line)


def literal(line: bytes) -> bytes:
    """TIFF PackBits, one literal run: header n-1, then the n bytes."""
    return bytes([len(line) - 1]) + line


def raster(line: bytes) -> bytes:
    return b"g\x00" + bytes([len(line)]) + line


def label_of(events: list[object]) -> LabelCut:
    (cut,) = [event for event in events if isinstance(event, LabelCut)]
    return cut


def decoder(model: str = "QL-820NWB", media: Media | None = None) -> BrotherQlDecoder:
    condition = PrinterCondition(media=media or Media(300, 696, 0))
    return BrotherQlDecoder(MODELS[model], condition)


def test_given_a_page_then_lines_are_mirrored_and_cut_to_the_rolls_printable_pins():
    # GIVEN a 62 mm roll (696 printable pins, 12 margin pins first) and three lines:
    # pins 707 and 12 (the label's left and right edges), a zero line, all pins packed
    stream = (
        INVALIDATE + INITIALIZE + RASTER_MODE + print_information(62, 0, 3) + COMPRESSION
        + raster(literal(pins(707, 12))) + ZERO_LINE + raster(bytes([257 - LINE_BYTES, 0xFF]))
        + PRINT_LAST
    )  # fmt: skip
    cut = label_of(decoder().feed(stream))
    image = cut.label.image
    # THEN the label is 696 dots wide, one row per line, as the label reads
    assert image.size == (696, 3)
    row = [[image.getpixel((x, y)) == 0 for x in range(696)] for y in range(3)]
    assert [x for x in range(696) if row[0][x]] == [0, 695]
    assert not any(row[1])
    assert all(row[2])
    assert cut.label.dpi == (300, 300) and cut.label.rejection is None


def test_given_uncompressed_lines_and_two_colour_lines_then_both_colours_print():
    stream = (
        INITIALIZE + raster(pins(707)) + b"w\x01" + bytes([LINE_BYTES]) + pins(700)
        + b"w\x02" + bytes([LINE_BYTES]) + pins(600) + b"\x0c"
    )  # fmt: skip
    image = label_of(decoder().feed(stream)).label.image
    assert image.size == (696, 2)
    assert [x for x in range(696) if image.getpixel((x, 1)) == 0] == [7, 107]


def test_given_the_wide_series_then_a_line_is_162_bytes_and_the_roll_sits_44_pins_in():
    line = bytearray(162)
    pin = 12 + 44 + 696 - 1  # the label's leftmost dot: margin pins, then the roll
    line[pin // 8] |= 0x80 >> (pin % 8)
    cut = label_of(decoder("QL-1110NWB").feed(raster(bytes(line)) + PRINT_LAST))
    assert cut.label.image.size == (696, 1)
    assert cut.label.image.getpixel((0, 0)) == 0


def test_given_high_resolution_then_the_label_is_300_by_600_dpi():
    stream = b"\x1biK\x48" + raster(pins(100)) + raster(pins(100)) + PRINT_LAST
    assert label_of(decoder().feed(stream)).label.dpi == (300, 600)


def test_given_print_information_for_another_roll_then_the_page_is_refused_replace_media():
    stream = print_information(29, 0, 1) + raster(pins(100)) + PRINT_LAST
    cut = label_of(decoder().feed(stream))
    assert cut.label.rejection is not None and "replace media" in cut.label.rejection


def test_given_a_die_cut_roll_and_its_print_information_then_the_page_prints():
    roll = Media(300, 696, 271)  # 62 x 29 mm die-cut
    stream = print_information(62, 29, 1, die_cut=True) + raster(pins(100)) + PRINT_LAST
    assert label_of(decoder(media=roll).feed(stream)).label.rejection is None


def test_given_status_requests_and_notification_settings_then_they_are_read():
    brother = decoder()
    assert brother.feed(STATUS_REQUEST) == [StatusInformationRequest()]
    brother.feed(b"\x1bi!\x01")
    assert brother.notify is False
    brother.feed(b"\x1biM\x40")
    assert brother.various_mode == 0x40
    brother.feed(INITIALIZE)
    assert brother.various_mode == 0


def test_given_initialize_mid_page_then_the_page_being_received_is_dropped():
    brother = decoder()
    brother.feed(raster(pins(100)))
    assert brother.has_pending_content
    assert brother.feed(INITIALIZE + PRINT_LAST) == []


def test_given_a_stream_split_at_every_byte_then_it_decodes_as_one_read():
    stream = (
        INVALIDATE[:10] + INITIALIZE + RASTER_MODE + STATUS_REQUEST + print_information(62, 0, 2)
        + COMPRESSION + raster(literal(pins(1, 300, 707))) + ZERO_LINE + PRINT_LAST
    )  # fmt: skip
    whole = decoder().feed(stream)
    brother = decoder()
    split = [event for byte in stream for event in brother.feed(bytes([byte]))]
    assert [type(event) for event in split] == [type(event) for event in whole]
    assert label_of(split).label.image.tobytes() == label_of(whole).label.image.tobytes()


@pytest.mark.parametrize("seed", range(5))
def test_given_random_bytes_then_the_decoder_never_raises(seed: int):
    generator = random.Random(seed)
    alphabet = b"\x00\x1b@iSazMAKd!gwZ\x0c\x1a\x02\x5a\xff\x10"
    data = bytes(generator.choice(alphabet) for _ in range(20_000))
    brother = decoder()
    for start in range(0, len(data), 997):
        brother.feed(data[start : start + 997])
