"""ZPL II decoding of known bytes: formats, fields, ^GF in every encoding, host queries."""

from __future__ import annotations

import base64
import binascii
import random
import zlib

import pytest
from PIL import Image, ImageOps

from badgeline.emulator.language import LabelCut
from badgeline.emulator.media import Media
from badgeline.emulator.state import PrinterCondition
from badgeline.emulator.zpl import HostQuery, HostStatusRequest, ZplDecoder
from tests.emulator.label_builders import zpl


def labels(data: bytes, decoder: ZplDecoder | None = None) -> list[LabelCut]:
    events = (decoder or ZplDecoder()).feed(data)
    return [event for event in events if isinstance(event, LabelCut)]


def dots(image: Image.Image) -> list[str]:
    """Each row as '#' for a dot and '.' for none."""
    rows = []
    for y in range(image.height):
        rows.append(
            "".join("#" if image.getpixel((x, y)) == 0 else "." for x in range(image.width))
        )
    return rows


def test_given_plain_hex_then_each_bit_is_a_dot_leftmost_first():
    # GIVEN a 16 x 2 label with a 1-byte-wide graphic: 80 then FF
    (cut,) = labels(zpl("^XA^PW16^LL2^FO4,0^GFA,2,2,1,80FF^FS^XZ"))
    # THEN the dots sit at the field origin, most significant bit leftmost
    assert dots(cut.label.image) == ["....#...........", "....########...."]
    assert cut.copies == 1


def test_given_the_compression_scheme_then_counts_commas_bangs_and_colons_expand():
    # GIVEN rows of 2 bytes: H0FF (2 zeros, FF), ':' repeat it, '!' all ones, 'I0,' zeros
    (cut,) = labels(zpl("^XA^PW16^LL4^FO0,0^GFA,8,8,2,H0FF:!I0,^FS^XZ"))
    assert dots(cut.label.image) == [
        "........########",
        "........########",
        "################",
        "................",
    ]


def test_given_repeat_counts_then_lower_and_upper_case_counts_add_up():
    # GIVEN a 25-byte row: hK = 40 + 5 = 45 F digits, then ',' fills the rest with 0
    (cut,) = labels(zpl("^XA^PW200^LL1^FO0,0^GFA,25,25,25,hKF,^FS^XZ"))
    row = dots(cut.label.image)[0]
    assert row == "#" * 180 + "." * 20


@pytest.mark.parametrize("encoding", ["B64", "Z64"])
def test_given_b64_or_z64_with_its_crc_then_the_graphic_decodes(encoding: str):
    raw = bytes(random.Random(3).randrange(256) for _ in range(4 * 16))
    body = raw if encoding == "B64" else zlib.compress(raw)
    encoded = base64.b64encode(body)
    crc = binascii.crc_hqx(encoded, 0)
    field = f":{encoding}:{encoded.decode()}:{crc:04X}"
    # WHEN it is sent with line breaks inside the Base64, as the guide allows
    wrapped = field[:20] + "\r\n" + field[20:]
    (cut,) = labels(zpl(f"^XA^PW32^LL16^FO0,0^GFA,{len(field)},64,4,{wrapped}^FS^XZ"))
    expected = Image.frombytes("1", (32, 16), raw, "raw", "1;I")
    assert cut.label.image.tobytes() == expected.tobytes()


def test_given_a_crc_mismatch_then_the_download_is_aborted_and_nothing_is_drawn():
    encoded = base64.b64encode(zlib.compress(b"\xff" * 8))
    crc = binascii.crc_hqx(encoded, 0) ^ 0x0001
    decoder = ZplDecoder()
    (cut,) = labels(
        zpl(f"^XA^PW8^LL8^FO0,0^GFA,1,8,1,:Z64:{encoded.decode()}:{crc:04X}^FS",
            "^FO0,0^FDx^FS^XZ"),
        decoder,
    )  # fmt: skip
    assert decoder.rejected_graphics == 1
    assert cut.label.truncated


def test_given_binary_data_holding_prefix_characters_then_it_is_read_by_its_count():
    # GIVEN ^GFB whose bytes are '^' (5E) and '~' (7E)
    (cut,) = labels(b"^XA^PW8^LL2^FO0,0^GFB,2,2,1,^~^FS^XZ")
    assert dots(cut.label.image) == [".#.####.", ".######."]


def test_given_text_fields_then_their_data_is_read_and_hex_escapes_decoded():
    decoder = ZplDecoder()
    (cut,) = labels(
        zpl("^XA^CF0,30^FO10,10^FDAda Lovelace^FS", "^FO10,60^FH^FD_6Aob badge-001^FS",
            "^FO10,100^BCN,50^FDnot text^FS^XZ"),
        decoder,
    )  # fmt: skip
    assert cut.label.text == ["Ada Lovelace", "job badge-001"]
    assert decoder.skipped_symbols == 1
    # The text is drawn at its origin: no dot above row 10 or left of column 10.
    box = ImageOps.invert(cut.label.image.convert("L")).getbbox()
    assert box is not None and box[0] >= 10 and box[1] >= 10


def test_given_print_width_length_home_and_quantity_then_the_label_is_laid_out_so():
    (cut,) = labels(zpl("^XA^PW40^LL20^LH5,3^PQ3^FO2,1^GFA,1,1,1,FF^FS^XZ"))
    assert cut.label.image.size == (40, 20)
    assert cut.copies == 3
    assert dots(cut.label.image)[4][7:15] == "########"


def test_given_no_print_width_then_the_loaded_media_sizes_the_label():
    condition = PrinterCondition(media=Media(dpi=300, width_dots=1200, length_dots=900))
    (cut,) = labels(zpl("^XA^FO0,0^GB100,50,5^FS^XZ"), ZplDecoder(condition))
    assert cut.label.image.size == (1200, 900)
    assert cut.label.dpi == (300, 300)


def test_given_print_width_and_length_then_they_stay_for_the_next_format():
    decoder = ZplDecoder()
    labels(zpl("^XA^PW64^LL32^JZN^XZ"), decoder)
    (cut,) = labels(zpl("^XA^FO0,0^GB8,8,8^FS^XZ"), decoder)
    assert cut.label.image.size == (64, 32)
    assert cut.label.reprint_after_error is False


def test_given_a_format_without_fields_then_no_label_is_cut():
    assert labels(zpl("^XA^MMC^PW100^XZ")) == []


def test_given_host_queries_inside_and_outside_a_format_then_each_is_an_event_at_once():
    decoder = ZplDecoder()
    assert decoder.feed(b"~HS") == [HostStatusRequest()]
    assert decoder.feed(b"^XA^FO0,0^FDa~HQES") == [HostQuery("ES")]
    assert decoder.has_pending_content  # the partial format
    assert [type(event) for event in decoder.feed(b"^FS^XZ")] == [LabelCut]
    assert not decoder.has_pending_content


def test_given_a_stream_split_at_every_byte_then_it_decodes_as_one_read():
    stream = zpl("junk^XA^PW16^LL4^FO0,0^GFA,8,8,2,H0FF:!I0,^FS^FO0,0^FDjob abcd^FS^PQ2^XZ~HS")
    whole = ZplDecoder().feed(stream)
    decoder = ZplDecoder()
    split = [event for byte in stream for event in decoder.feed(bytes([byte]))]
    assert [type(event) for event in split] == [type(event) for event in whole]
    first, second = whole[0], split[0]
    assert isinstance(first, LabelCut) and isinstance(second, LabelCut)
    assert first.label.image.tobytes() == second.label.image.tobytes()
    assert first.label.text == second.label.text == ["job abcd"]


@pytest.mark.parametrize("seed", range(5))
def test_given_random_bytes_then_the_decoder_never_raises(seed: int):
    generator = random.Random(seed)
    alphabet = b"^~XAZFOGDSPQLW,:!0123456789ABCDEFghijkz\r\n"
    data = bytes(generator.choice(alphabet) for _ in range(20_000))
    decoder = ZplDecoder()
    for start in range(0, len(data), 997):
        decoder.feed(data[start : start + 997])


def test_given_a_downloaded_graphic_then_xg_recalls_it_where_the_field_starts():
    # GIVEN a 16 x 2 graphic stored as R:BADGE.GRF (~DG, the compression scheme)
    decoder = ZplDecoder()
    assert labels(zpl("~DGR:BADGE.GRF,4,2,\r\nH0FF\r\n!\r\n"), decoder) == []
    # WHEN a format recalls it at 4,1, named without its device, and again twice as large
    (cut,) = labels(zpl("^XA^PW24^LL6^FO4,1^XGBADGE.GRF,1,1^FS^XZ"), decoder)
    (large,) = labels(zpl("^XA^PW32^LL4^FO0,0^XGR:BADGE.GRF,2,2^FS^XZ"), decoder)
    # THEN its dots print there, and magnified each dot is 2 x 2
    assert dots(cut.label.image)[1:3] == [
        "............########....",
        "....################....",
    ]
    assert dots(large.label.image) == ["................" + "#" * 16] * 2 + ["#" * 32] * 2


def test_given_a_graphic_deleted_by_id_then_a_later_recall_prints_nothing():
    # GIVEN two stored graphics, one deleted by ^ID in a format of its own (as CUPS does)
    decoder = ZplDecoder()
    labels(zpl("~DGR:CUPS.GRF,1,1,FF", "~DGR:LOGO.GRF,1,1,0F"), decoder)
    assert labels(zpl("^XA^IDR:CUPS.GRF^FS^XZ"), decoder) == []
    # THEN only the other is left: recalling the deleted one draws nothing
    assert decoder.graphics.names() == ["R:LOGO.GRF"]
    assert labels(zpl("^XA^PW8^LL1^FO0,0^XGR:CUPS.GRF,1,1^FS^XZ"), decoder) == []
    labels(zpl("^XA^ID*.GRF^FS^XZ"), decoder)
    assert decoder.graphics.names() == []


def test_given_print_orientation_inverted_then_the_format_is_turned_half_a_turn():
    # GIVEN a dot at the top left of an 8 x 2 label, printed ^POI
    decoder = ZplDecoder()
    (cut,) = labels(zpl("^XA^POI^PW8^LL2^FO0,0^GFA,1,1,1,80^FS^XZ"), decoder)
    # THEN it comes out at the bottom right; ^PON turns it back
    assert dots(cut.label.image) == ["........", ".......#"]
    (upright,) = labels(zpl("^XA^PON^FO0,0^GFA,1,1,1,80^FS^XZ"), decoder)
    assert dots(upright.label.image)[0] == "#......."
