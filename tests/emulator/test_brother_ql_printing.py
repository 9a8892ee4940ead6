"""A Brother QL over TCP: pages from an independent client (brother-ql-next) print as
their image; the 32-byte status for every condition; the statuses a QL sends by itself;
faults, slow mode and the bounded buffer."""

from __future__ import annotations

import pytest
from brother_ql.conversion import convert
from brother_ql.raster import BrotherQLRaster
from brother_ql.reader import interpret_response
from PIL import Image

from badgeline.emulator import Fault
from badgeline.emulator.media import Media
from tests.emulator.conftest import PrinterClient, StartPrinter
from tests.emulator.label_builders import gray_badge, same_dots, thresholded

STATUS_REQUEST = b"\x1biS"
VERY_SLOW_MS = 600_000
# brother-ql-next's threshold 50 (%) prints the grey levels at or below 128
THRESHOLD_PERCENT, THRESHOLD = 50, 128
# status byte 18
REPLY, PRINTING_COMPLETED, ERROR_OCCURRED, PHASE_CHANGE = 0x00, 0x01, 0x02, 0x06
WAITING, PRINTING = 0x00, 0x01


def ql_raster(model: str, image: Image.Image, label: str = "62", **options: object) -> bytes:
    raster = BrotherQLRaster(model)
    raster.exception_on_warning = True
    return convert(raster, [image], label, threshold=THRESHOLD_PERCENT, **options)


async def statuses(client: PrinterClient, count: int) -> list[bytes]:
    data = await client.read_exactly(32 * count)
    return [data[index : index + 32] for index in range(0, len(data), 32)]


def kinds(replies: list[bytes]) -> list[tuple[int, int]]:
    return [(reply[18], reply[19]) for reply in replies]


@pytest.mark.parametrize("model", ["QL-820NWB", "QL-1110NWB"])
@pytest.mark.parametrize("compress", [True, False])
async def test_given_a_brother_ql_next_page_then_the_png_is_the_image_dot_for_dot(
    start_printer: StartPrinter, model: str, compress: bool
):
    # GIVEN a grey badge turned into QL raster for a 62 mm roll by brother-ql-next
    source = gray_badge(696, 420)
    data = ql_raster(model, source, compress=compress)
    printer, client = await start_printer(language="brother-ql", model=model)
    # WHEN it is sent to the emulated QL
    await client.send(data)
    # THEN the QL answers the status request in the job, then reports the page going through
    replies = await statuses(client, 4)
    assert kinds(replies) == [(REPLY, WAITING), (PHASE_CHANGE, PRINTING),
                              (PRINTING_COMPLETED, PRINTING), (PHASE_CHANGE, WAITING)]  # fmt: skip
    # AND the saved PNG is the thresholded image, dot for dot, at 300 dpi
    (badge,) = printer.printed
    assert badge.png is not None and badge.job_id is None  # a raster carries no text
    with Image.open(badge.png) as png:
        assert same_dots(png, thresholded(source, THRESHOLD))
        assert tuple(round(value) for value in png.info["dpi"]) == (300, 300)


async def test_given_a_die_cut_roll_then_a_die_cut_page_prints_at_its_size(
    start_printer: StartPrinter,
):
    source = gray_badge(696, 271, seed=11)  # 62 x 29 mm die-cut: 696 x 271 dots
    printer, client = await start_printer(language="brother-ql", media=Media(300, 696, 271))
    await client.send(ql_raster("QL-820NWB", source, "62x29"))
    replies = await statuses(client, 4)
    assert interpret_response(replies[2])["status_type"] == "Printing completed"
    assert same_dots(printer.printed[0].raster, thresholded(source, THRESHOLD))


# fault -> error information 1 and 2 (status bytes 8, 9), and brother-ql-next's name of it
CONDITIONS = {
    Fault.NONE: (0x00, 0x00, None),
    Fault.PAPER_OUT: (0x01, 0x00, "No media when printing"),
    Fault.JAM: (0x04, 0x00, "Tape cutter jam"),
    Fault.COVER_OPEN: (0x00, 0x10, "Cover opened while printing (Except QL-500)"),
    Fault.PAPER_LOW: (0x00, 0x00, None),  # a QL has no near-end sensor
}


@pytest.mark.parametrize("fault", list(CONDITIONS))
async def test_given_a_condition_then_the_status_reply_reports_it_where_the_reference_says(
    start_printer: StartPrinter, fault: Fault
):
    _, client = await start_printer(language="brother-ql", fault=fault)
    await client.send(b"\x00" * 400 + b"\x1b@" + STATUS_REQUEST)
    (reply,) = await statuses(client, 1)
    first, second, name = CONDITIONS[fault]
    # THEN the fixed bytes, the model, the roll and the error bits sit at their offsets
    assert reply[:6] == bytes([0x80, 0x20, 0x42, 0x34, 0x41, 0x30])
    assert (reply[8], reply[9]) == (first, second)
    assert (reply[10], reply[11], reply[17]) == (62, 0x0A, 0)  # 62 mm continuous tape
    assert (reply[18], reply[19]) == (REPLY, WAITING)
    # AND an independent reader of the reference's layout decodes the same
    decoded = interpret_response(reply)
    assert decoded["errors"] == ([name] if name else [])
    assert (decoded["media_width"], decoded["media_type"]) == (62, "Continuous length tape")
    assert decoded["status_type"] == "Reply to status request"


async def test_given_a_die_cut_roll_at_its_end_then_the_status_says_end_of_media(
    start_printer: StartPrinter,
):
    roll = Media(300, 1164, 1660)  # 102 x 152 mm die-cut
    _, client = await start_printer(
        language="brother-ql", model="QL-1110NWB", media=roll, fault=Fault.PAPER_OUT
    )
    await client.send(STATUS_REQUEST)
    (reply,) = await statuses(client, 1)
    assert reply[4] == 0x44  # QL-1110NWB
    decoded = interpret_response(reply)
    assert decoded["errors"] == ["End of media (die-cut size only)"]
    assert (decoded["media_width"], decoded["media_length"]) == (102, 152)
    assert decoded["media_type"] == "Die-cut labels"


async def test_given_a_page_for_another_roll_then_it_is_refused_with_replace_media(
    start_printer: StartPrinter,
):
    printer, client = await start_printer(language="brother-ql")  # 62 mm loaded
    await client.send(ql_raster("QL-820NWB", gray_badge(306, 200), "29"))
    _, error = await statuses(client, 2)
    assert (error[18], error[8], error[9]) == (ERROR_OCCURRED, 0x00, 0x01)
    assert interpret_response(error)["errors"] == ["Replace media error"]
    assert printer.printed == [] and printer.status()["discarded"] == 1


async def test_given_a_cover_opened_mid_page_then_error_occurred_and_the_buffer_is_cleared(
    start_printer: StartPrinter,
):
    # GIVEN a slow QL, with room for both, printing the first of two pages
    printer, client = await start_printer(language="brother-ql", ms_per_badge=VERY_SLOW_MS,
                                          buffer_bytes=64 * 1024)  # fmt: skip
    page = ql_raster("QL-820NWB", gray_badge(696, 150))
    await client.send(page + page)
    # (the second page's status request is answered while the first one prints)
    assert sorted(kinds(await statuses(client, 3))) == [
        (REPLY, WAITING), (REPLY, PRINTING), (PHASE_CHANGE, PRINTING)
    ]  # fmt: skip
    await printer.wait_until(lambda p: p.status()["queued"] == 1)
    # WHEN its cover is opened
    printer.fault = Fault.COVER_OPEN
    # THEN it reports the error once, and "all data read from the computer is cleared"
    (error,) = await statuses(client, 1)
    assert (error[18], error[9]) == (ERROR_OCCURRED, 0x10)
    assert printer.status()["discarded"] == 2
    printer.fault = Fault.NONE
    printer.ms_per_badge = 0
    await client.send(STATUS_REQUEST)
    (reply,) = await statuses(client, 1)  # the next thing it says answers the request
    assert (reply[18], reply[8], reply[9]) == (REPLY, 0, 0)
    assert printer.printed == []


async def test_given_slow_mode_then_printing_completed_comes_only_once_the_page_is_out(
    start_printer: StartPrinter,
):
    printer, client = await start_printer(language="brother-ql", ms_per_badge=VERY_SLOW_MS)
    await client.send(ql_raster("QL-820NWB", gray_badge(696, 150)))
    assert kinds(await statuses(client, 2)) == [(REPLY, WAITING), (PHASE_CHANGE, PRINTING)]
    assert printer.printed == [] and printer.status()["printing"]
    printer.ms_per_badge = 0
    completed, waiting = await statuses(client, 2)
    assert (completed[18], waiting[18], waiting[19]) == (PRINTING_COMPLETED, PHASE_CHANGE, WAITING)
    assert len(printer.printed) == 1


async def test_given_notification_off_then_only_status_requests_are_answered(
    start_printer: StartPrinter,
):
    printer, client = await start_printer(language="brother-ql")
    await client.send(b"\x1bi!\x01" + ql_raster("QL-820NWB", gray_badge(696, 150)))
    await printer.wait_until(lambda p: len(p.printed) == 1)
    (reply,) = await statuses(client, 1)  # the request inside the job, and nothing else
    await client.send(STATUS_REQUEST)
    (again,) = await statuses(client, 1)
    assert (reply[18], again[18]) == (REPLY, REPLY)


async def test_given_write_only_then_the_ql_sends_nothing(start_printer: StartPrinter):
    printer, client = await start_printer(language="brother-ql", write_only=True)
    await client.send(ql_raster("QL-820NWB", gray_badge(696, 150)))
    await printer.wait_until(lambda p: len(p.printed) == 1)
    printer.write_only = False
    await client.send(STATUS_REQUEST)
    (reply,) = await statuses(client, 1)
    assert reply[18] == REPLY


async def test_given_a_slow_ql_then_a_full_buffer_holds_the_pages_back_and_all_print_once(
    start_printer: StartPrinter,
):
    # GIVEN a slow QL with a 16 KiB buffer, sent 8 pages of about 14 KB each
    printer, client = await start_printer(language="brother-ql", ms_per_badge=VERY_SLOW_MS,
                                          buffer_bytes=16 * 1024)  # fmt: skip
    sources = [gray_badge(696, 150, seed=seed) for seed in range(8)]
    client.writer.write(b"".join(ql_raster("QL-820NWB", source) for source in sources))
    await printer.wait_until(lambda p: p.status()["held_bytes"] >= 16 * 1024)
    # THEN the first page prints while the second cannot all come in: the rest waits
    # with the sender
    status = printer.status()
    assert status["printing"] and status["queued"] == 0
    assert status["held_bytes"] < 16 * 1024 + 4096
    # AND once it speeds up, every page prints once, in order
    printer.ms_per_badge = 0
    await client.writer.drain()
    await printer.wait_until(lambda p: len(p.printed) == 8)
    for badge, source in zip(printer.printed, sources, strict=True):
        assert same_dots(badge.raster, thresholded(source, THRESHOLD))
