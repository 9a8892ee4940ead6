"""Printing over TCP: what becomes a badge, what a fault throws away, what is recorded."""

from __future__ import annotations

import asyncio
import random

import pytest
from PIL import Image

from badgeline.emulator import Fault, PrinterEmulator
from tests.emulator.escpos_builders import (
    FULL_CUT,
    badge_image,
    badge_job,
    raster_command,
    status_query,
)


def printed_count(count: int):
    return lambda printer: len(printer.printed) == count


def discarded_count(count: int):
    return lambda printer: printer.status()["discarded"] == count


async def test_given_a_badge_job_when_sent_then_one_print_is_recorded_with_its_job_id(
    emulator: PrinterEmulator, connect
):
    # GIVEN a healthy printer and a job with a footer
    client = await connect()
    # WHEN the agent sends it
    await client.send(badge_job("job_A-0001", badge_image()))
    # THEN exactly one print is recorded, for that job
    await emulator.wait_until(printed_count(1))
    (badge,) = emulator.printed
    assert badge.job_id == "job_A-0001"
    assert emulator.printed_rows() == [
        {
            "job_id": "job_A-0001",
            "at": badge.at,
            "started_at": badge.started_at,
            "png": str(badge.png),
        }
    ]


async def test_given_a_raster_sent_over_tcp_then_the_recorded_image_matches_pixel_for_pixel(
    emulator: PrinterEmulator, connect
):
    reference = badge_image(576, 300, seed=42)
    client = await connect()

    await client.send(badge_job("roundtrip", reference))
    await emulator.wait_until(printed_count(1))

    raster = emulator.printed[0].raster
    assert raster is not None
    assert raster.size == reference.size
    assert raster.tobytes() == reference.tobytes()


async def test_given_a_print_then_its_png_is_written_showing_image_and_text(
    emulator: PrinterEmulator, connect
):
    client = await connect()

    await client.send(badge_job("png-check", badge_image(384, 160)))
    await emulator.wait_until(printed_count(1))

    png = emulator.printed[0].png
    assert png is not None
    assert png.parent == emulator.out_dir
    with Image.open(png) as picture:
        assert picture.format == "PNG"
        assert picture.width == 576  # 80 mm paper
        assert picture.height > 160 + 2 * 34  # the image, then the name and footer lines
        # text below the image is inked, so the picture holds more black than the image
        below_image = picture.convert("L").crop((0, 16 + 160, 576, picture.height))
        assert below_image.getextrema()[0] == 0


async def test_given_no_footer_then_the_print_is_recorded_without_a_job_id(
    emulator: PrinterEmulator, connect
):
    client = await connect()

    await client.send(badge_job(None, badge_image()))
    await emulator.wait_until(printed_count(1))

    assert emulator.printed[0].job_id is None
    assert emulator.printed_rows()[0]["job_id"] is None


@pytest.mark.parametrize("footer", ["job abc", "job " + "x" * 65, "job a b c d", "jobs abcd"])
async def test_given_a_footer_not_matching_the_job_pattern_then_job_id_is_null(
    emulator: PrinterEmulator, connect, footer: str
):
    client = await connect()

    await client.send(b"\x1b@" + footer.encode() + b"\n" + FULL_CUT)
    await emulator.wait_until(printed_count(1))

    assert emulator.printed[0].job_id is None


async def test_given_several_jobs_on_one_connection_then_each_cut_is_one_print(
    emulator: PrinterEmulator, connect
):
    client = await connect()

    await client.send(b"".join(badge_job(f"same-conn-{index}") for index in range(5)))
    await emulator.wait_until(printed_count(5))

    assert [badge.job_id for badge in emulator.printed] == [f"same-conn-{i}" for i in range(5)]


async def test_given_sequential_connections_then_every_job_prints_once(
    emulator: PrinterEmulator, connect
):
    for index in range(3):
        client = await connect()
        await client.send(badge_job(f"sequential-{index}"))
        await client.finish()

    await emulator.wait_until(printed_count(3))
    assert sorted(badge.job_id or "" for badge in emulator.printed) == [
        f"sequential-{index}" for index in range(3)
    ]
    assert emulator.status()["connections_total"] == 3


async def test_given_concurrent_connections_interleaving_their_bytes_then_each_job_is_whole(
    emulator: PrinterEmulator, connect
):
    # GIVEN five hosts, each with its own image
    images = {f"concurrent-{index}": badge_image(256, 64, seed=index) for index in range(5)}
    clients = {job_id: await connect() for job_id in images}

    # WHEN they send their jobs in small pieces, taking turns
    async def send_in_pieces(job_id: str) -> None:
        payload = badge_job(job_id, images[job_id])
        for start in range(0, len(payload), 97):
            await clients[job_id].send(payload[start : start + 97])
            await asyncio.sleep(0)

    await asyncio.gather(*(send_in_pieces(job_id) for job_id in images))
    # THEN each connection's job is one print with its own image
    await emulator.wait_until(printed_count(5))
    for badge in emulator.printed:
        assert badge.job_id is not None
        assert badge.raster is not None
        assert badge.raster.tobytes() == images[badge.job_id].tobytes()


@pytest.mark.parametrize("fault", [Fault.JAM, Fault.COVER_OPEN, Fault.PAPER_OUT, Fault.OFFLINE])
async def test_given_a_fault_then_prints_are_discarded_until_it_clears(
    emulator: PrinterEmulator, connect, fault: Fault
):
    # GIVEN a faulted printer
    emulator.fault = fault
    client = await connect()
    # WHEN a job arrives
    await client.send(badge_job("lost-to-fault", badge_image()))
    # THEN nothing is printed
    await emulator.wait_until(discarded_count(1))
    assert emulator.printed == []
    # AND once the fault clears the next job prints
    emulator.fault = Fault.NONE
    await client.send(badge_job("after-fault"))
    await emulator.wait_until(printed_count(1))
    assert [badge.job_id for badge in emulator.printed] == ["after-fault"]


async def test_given_paper_low_then_badges_still_print(emulator: PrinterEmulator, connect):
    emulator.fault = Fault.PAPER_LOW
    client = await connect()

    await client.send(badge_job("paper-low-1"))
    await emulator.wait_until(printed_count(1))

    assert emulator.printed[0].job_id == "paper-low-1"


async def test_given_content_received_during_a_jam_then_its_page_is_lost_after_recovery(
    emulator: PrinterEmulator, connect
):
    # GIVEN the image of a job arrives while the printer is jammed
    emulator.fault = Fault.JAM
    client = await connect()
    await client.send(b"\x1b@" + raster_command(badge_image()) + status_query(1))
    assert await client.read_exactly(1) == b"\x1a"  # the printer has read the image
    # WHEN the jam clears and the rest of the job, with its cut, arrives
    emulator.fault = Fault.NONE
    await client.send(b"job half-in-jam\n" + FULL_CUT)
    # THEN that page is not a badge, and the next job is
    await emulator.wait_until(discarded_count(1))
    await client.send(badge_job("clean"))
    await emulator.wait_until(printed_count(1))
    assert [badge.job_id for badge in emulator.printed] == ["clean"]


async def test_given_slow_mode_then_badges_are_still_recorded_in_order(
    emulator: PrinterEmulator, connect
):
    emulator.ms_per_badge = 150
    client = await connect()

    await client.send(badge_job("slow-1") + badge_job("slow-2"))
    # the status byte answers at once even though the printer is busy printing
    await client.send(status_query(1))
    assert await client.read_exactly(1) == b"\x12"
    await emulator.wait_until(printed_count(2))

    assert [badge.job_id for badge in emulator.printed] == ["slow-1", "slow-2"]
    assert emulator.printed[0].at <= emulator.printed[1].at


async def test_given_a_fault_while_a_slow_badge_is_printing_then_that_badge_is_lost(
    emulator: PrinterEmulator, connect
):
    # GIVEN a badge going through a very slow printer
    emulator.ms_per_badge = 600_000
    client = await connect()
    await client.send(badge_job("mid-print"))
    await emulator.wait_until(lambda printer: printer.status()["printing"])
    # WHEN the printer jams
    emulator.fault = Fault.JAM
    # THEN the badge is discarded at once and never recorded
    await emulator.wait_until(discarded_count(1))
    assert emulator.printed == []
    assert not emulator.status()["printing"]


async def test_given_a_connection_closing_before_the_cut_then_nothing_prints(
    emulator: PrinterEmulator, connect
):
    client = await connect()
    job = badge_job("never-cut", badge_image())

    await client.send(job[: -len(FULL_CUT)])
    await client.finish()
    await emulator.wait_until(lambda printer: printer.status()["abandoned"] == 1)

    assert emulator.printed == []


async def test_given_64k_of_random_garbage_then_the_server_survives_and_the_next_job_prints(
    emulator: PrinterEmulator, connect
):
    # GIVEN a connection that sends 64 KiB of random bytes, then hangs up
    garbage = random.Random(20240501).randbytes(64 * 1024)
    noisy = await connect()
    await noisy.send(garbage)
    await noisy.finish()
    await emulator.wait_until(lambda printer: printer.status()["connections"] == 0)
    # WHEN a host sends a good job on a new connection (the garbage may have
    # left its own connection inside a bogus command, as on a real printer)
    client = await connect()
    await client.send(badge_job("after-garbage", badge_image()))
    # THEN that job prints and the printer still answers status
    await emulator.wait_until(
        lambda printer: any(badge.job_id == "after-garbage" for badge in printer.printed)
    )
    await client.send(status_query(1))
    assert await client.read_exactly(1) == b"\x12"


async def test_given_the_status_request_during_a_long_raster_then_it_is_not_answered_early(
    emulator: PrinterEmulator, connect
):
    # A raster whose rows happen to contain DLE EOT 1 must not make the printer talk.
    image = Image.frombytes("1", (24, 2), b"\x10\x04\x01" * 2, "raw", "1;I")
    client = await connect()

    await client.send(raster_command(image) + b"job in-data-1\n" + FULL_CUT + status_query(2))

    assert await client.read_exactly(1) == b"\x12"
    await emulator.wait_until(printed_count(1))
    assert emulator.status()["status_queries"] == 1


async def test_given_reset_then_the_record_is_empty_and_new_prints_are_counted_afresh(
    emulator: PrinterEmulator, connect
):
    client = await connect()
    await client.send(badge_job("before-reset"))
    await emulator.wait_until(printed_count(1))
    first_png = emulator.printed[0].png

    emulator.reset()
    await client.send(badge_job("after-reset"))
    await emulator.wait_until(printed_count(1))

    assert [badge.job_id for badge in emulator.printed] == ["after-reset"]
    assert first_png is not None and first_png.exists()  # pictures are never overwritten
    assert emulator.printed[0].png != first_png
