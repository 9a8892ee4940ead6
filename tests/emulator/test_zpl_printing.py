"""A Zebra over TCP: labels from an independent client (zebrafy) print as their image;
faults, slow mode and the bounded buffer as a Zebra has them."""

from __future__ import annotations

import pytest
from PIL import Image
from zebrafy import ZebrafyImage

from badgeline.emulator import Fault, PrinterEmulator
from badgeline.emulator.media import Media
from tests.emulator.conftest import StartPrinter
from tests.emulator.label_builders import gray_badge, same_dots, thresholded, zpl

VERY_SLOW_MS = 600_000
THRESHOLD = 128


def label(job_id: str, extra: str = "") -> bytes:
    return zpl(f"^XA{extra}^FO20,20^GB300,120,6^FS^FO20,200^A0N,40^FDjob {job_id}^FS^XZ")


def printed(count: int):
    return lambda printer: len(printer.printed) == count


@pytest.mark.parametrize("encoding", ["ASCII", "ASCII_COMPRESSED", "B64", "Z64"])
async def test_given_a_zebrafy_label_over_tcp_then_the_png_is_the_image_dot_for_dot(
    start_printer: StartPrinter, encoding: str
):
    # GIVEN a grey badge image turned into ZPL by zebrafy, sized to the image
    source = gray_badge(600, 400)
    data = ZebrafyImage(source, format=encoding, dither=False, threshold=THRESHOLD,
                        set_label_size=True, string_line_break=80).to_zpl()  # fmt: skip
    printer, client = await start_printer(language="zpl")
    # WHEN it is sent to the emulated Zebra
    await client.send(data.encode("ascii"))
    await printer.wait_until(printed(1))
    # THEN the saved PNG is the thresholded image, dot for dot, at 203 dpi
    (badge,) = printer.printed
    assert badge.png is not None
    with Image.open(badge.png) as png:
        assert same_dots(png, thresholded(source, THRESHOLD))
        assert tuple(round(value) for value in png.info["dpi"]) == (203, 203)


async def test_given_an_image_placed_on_300_dpi_media_then_the_label_is_the_media_size(
    start_printer: StartPrinter,
):
    source = gray_badge(500, 300, seed=9)
    data = ZebrafyImage(source, format="Z64", dither=False, threshold=THRESHOLD,
                        pos_x=40, pos_y=30).to_zpl()  # fmt: skip
    printer, client = await start_printer(language="zpl", media=Media(300, 1200, 900))
    await client.send(data.encode("ascii"))
    await printer.wait_until(printed(1))
    raster = printer.printed[0].raster
    assert raster is not None and raster.size == (1200, 900)
    assert same_dots(raster.crop((40, 30, 540, 330)), thresholded(source, THRESHOLD))


async def test_given_a_quantity_then_each_label_is_one_print(start_printer: StartPrinter):
    printer, client = await start_printer(language="zpl")
    await client.send(label("batch-001", "^PQ3"))
    await printer.wait_until(printed(3))
    assert [badge.job_id for badge in printer.printed] == ["batch-001"] * 3


@pytest.mark.parametrize(
    "fault", [Fault.PAPER_OUT, Fault.RIBBON_OUT, Fault.COVER_OPEN, Fault.JAM, Fault.PAUSED]
)
async def test_given_an_error_then_the_zebra_keeps_its_formats_and_prints_them_after(
    start_printer: StartPrinter, fault: Fault
):
    # GIVEN a Zebra in an error, sent two labels
    printer, client = await start_printer(language="zpl", fault=fault)
    await client.send(label("kept-0001") + label("kept-0002"))
    await printer.wait_until(lambda p: p.status()["queued"] == 2)
    assert printer.printed == []
    # WHEN the error is cleared
    printer.fault = Fault.NONE
    # THEN both print, once each, nothing was thrown away
    await printer.wait_until(printed(2))
    assert [badge.job_id for badge in printer.printed] == ["kept-0001", "kept-0002"]
    assert printer.status()["discarded"] == 0


async def test_given_an_error_mid_label_then_that_label_is_printed_again_once(
    start_printer: StartPrinter,
):
    # GIVEN a slow Zebra printing a label
    printer, client = await start_printer(language="zpl", ms_per_badge=VERY_SLOW_MS)
    await client.send(label("again-001"))
    await printer.wait_until(lambda p: p.status()["printing"])
    # WHEN the paper runs out under it, and is loaded again
    printer.fault = Fault.PAPER_OUT
    await printer.wait_until(lambda p: p.status()["discarded"] == 1)  # the part printed
    printer.fault = Fault.NONE
    printer.ms_per_badge = 0
    # THEN the label comes out whole once (^JZ: reprint after error)
    await printer.wait_until(printed(1))
    assert [badge.job_id for badge in printer.printed] == ["again-001"]


async def test_given_reprint_after_error_off_then_the_interrupted_label_is_not_reprinted(
    start_printer: StartPrinter,
):
    printer, client = await start_printer(language="zpl", ms_per_badge=VERY_SLOW_MS)
    await client.send(label("once-0001", "^JZN") + label("next-0001"))
    await printer.wait_until(lambda p: p.status()["printing"])
    printer.fault = Fault.COVER_OPEN
    await printer.wait_until(lambda p: p.status()["discarded"] == 1)
    printer.fault = Fault.NONE
    printer.ms_per_badge = 0
    await printer.wait_until(printed(1))
    assert [badge.job_id for badge in printer.printed] == ["next-0001"]


async def test_given_the_zebra_switched_off_then_its_buffer_is_lost(
    start_printer: StartPrinter,
):
    printer, client = await start_printer(language="zpl", fault=Fault.PAUSED)
    await client.send(label("lost-0001"))
    await printer.wait_until(lambda p: p.status()["queued"] == 1)
    printer.fault = Fault.OFFLINE
    assert printer.status()["discarded"] == 1
    printer.fault = Fault.NONE
    await client.send(label("after-001"))
    await printer.wait_until(printed(1))
    assert [badge.job_id for badge in printer.printed] == ["after-001"]


async def test_given_slow_mode_then_a_label_is_printed_only_when_its_time_is_up(
    start_printer: StartPrinter,
):
    printer, client = await start_printer(language="zpl", ms_per_badge=VERY_SLOW_MS)
    await client.send(label("slow-0001"))
    await printer.wait_until(lambda p: p.status()["printing"])
    assert printer.printed == []
    printer.ms_per_badge = 0
    await printer.wait_until(printed(1))
    assert printer.status()["printing"] is False


async def test_given_a_paused_zebra_then_a_full_buffer_holds_the_sender_back(
    start_printer: StartPrinter,
):
    # GIVEN a paused Zebra with a 2 KiB buffer
    printer, client = await start_printer(language="zpl", fault=Fault.PAUSED, buffer_bytes=2048)
    # WHEN 200 small labels of 70 bytes each (14 KB) are sent
    jobs = b"".join(label(f"held-{number:04d}", "^PW340^LL250") for number in range(200))
    client.writer.write(jobs)
    await printer.wait_until(lambda p: p.status()["held_bytes"] >= 2048)
    # THEN it stops reading with its buffer full: the rest waits with the sender
    status = printer.status()
    assert status["queued"] < 100
    assert status["held_bytes"] < 2048 + 4096
    # AND once it resumes, every label prints exactly once, in order
    printer.fault = Fault.NONE
    await client.writer.drain()
    await printer.wait_until(printed(200))
    assert [badge.job_id for badge in printer.printed] == [f"held-{n:04d}" for n in range(200)]


def test_an_emulator_refuses_media_wider_than_the_zebras_head(tmp_path):
    with pytest.raises(ValueError, match="832-dot head"):
        PrinterEmulator(out_dir=tmp_path, language="zpl", media=Media(203, 900, 600))
