"""ZPL ~HS and ~HQES over TCP, read field by field as the ZPL II Programming Guide lays
them out, and the print confirmation they give."""

from __future__ import annotations

import pytest

from badgeline.emulator import Fault
from badgeline.emulator.media import Media
from tests.emulator.conftest import PrinterClient, StartPrinter
from tests.emulator.label_builders import CRLF, ETX, host_status_fields, hqes_flags, zpl

VERY_SLOW_MS = 600_000
LABEL = zpl("^XA^FO10,10^GB200,100,10^FS^FO10,150^FDjob zpl-0001^FS^XZ")

# ~HS string 1: b paper out, c pause, f buffer full; string 2: o head up, p ribbon out.
PAPER_OUT, PAUSE, BUFFER_FULL, PARTIAL = (0, 1), (0, 2), (0, 5), (0, 7)
FORMATS_WAITING, LABEL_LENGTH = (0, 4), (0, 3)
HEAD_UP, RIBBON_OUT, PRINT_MODE, LABELS_REMAINING = (1, 2), (1, 3), (1, 5), (1, 8)


async def host_status(client: PrinterClient) -> list[list[str]]:
    await client.send(b"~HS")
    return host_status_fields(await client.read_until(ETX + CRLF, times=3))


def field(fields: list[list[str]], position: tuple[int, int]) -> str:
    return fields[position[0]][position[1]]


async def test_given_a_healthy_idle_printer_then_host_status_reports_every_field_clear(
    start_printer: StartPrinter,
):
    _, client = await start_printer(language="zpl")
    fields = await host_status(client)
    # THEN the three strings have the guide's 12, 11 and 2 fields, every flag down
    assert [len(string) for string in fields] == [12, 11, 2]
    assert fields[0] == ["030", "0", "0", "0609", "000", "0", "0", "0", "000", "0", "0", "0"]
    assert fields[1] == ["000", "0", "0", "0", "0", "2", "0", "0", "00000000", "1", "000"]
    assert fields[2] == ["1234", "0"]


# fault -> the ~HS field that reports it, and the ~HQES error and warning bits
CONDITIONS = {
    Fault.PAPER_OUT: (PAPER_OUT, 0x00000001, 0),
    Fault.RIBBON_OUT: (RIBBON_OUT, 0x00000002, 0),
    Fault.COVER_OPEN: (HEAD_UP, 0x00000004, 0),
    Fault.JAM: (None, 0x00000008, 0),
    Fault.PAUSED: (PAUSE, 0x00010000, 0),
    Fault.PAPER_LOW: (None, 0, 0x00000008),
}


@pytest.mark.parametrize("fault", list(CONDITIONS))
async def test_given_a_condition_then_host_status_and_hqes_report_exactly_it(
    start_printer: StartPrinter, fault: Fault
):
    # GIVEN a Zebra in this condition
    _, client = await start_printer(language="zpl", fault=fault)
    flag, errors, warnings = CONDITIONS[fault]
    # WHEN the host asks ~HS
    fields = await host_status(client)
    # THEN only the flag of this condition is up
    for position in (PAPER_OUT, PAUSE, BUFFER_FULL, PARTIAL, HEAD_UP, RIBBON_OUT):
        assert field(fields, position) == ("1" if position == flag else "0"), position
    # AND ~HQES carries its error or warning bit
    await client.send(b"~HQES")
    assert hqes_flags(await client.read_until(ETX + CRLF)) == (errors, warnings)


async def test_given_a_printer_switched_off_then_it_answers_nothing(
    start_printer: StartPrinter,
):
    # GIVEN a Zebra switched off that has read two queries
    printer, client = await start_printer(language="zpl", fault=Fault.OFFLINE)
    await client.send(b"~HS~HQES")
    await printer.wait_until(lambda p: p.status()["status_queries"] == 2)
    # WHEN it is back and asked again
    printer.fault = Fault.NONE
    await client.send(b"~HQES")
    # THEN the first bytes the host ever gets answer the new query
    assert hqes_flags(await client.read_until(ETX + CRLF)) == (0, 0)


async def test_given_a_hung_printer_then_its_answer_comes_once_it_thaws(
    start_printer: StartPrinter,
):
    printer, client = await start_printer(language="zpl", fault=Fault.FROZEN)
    await client.send(b"~HQES")
    assert printer.status()["status_queries"] == 0  # it reads nothing while hung
    printer.fault = Fault.NONE
    assert hqes_flags(await client.read_until(ETX + CRLF)) == (0, 0)


async def test_given_a_partial_format_and_the_print_mode_then_host_status_shows_them(
    start_printer: StartPrinter,
):
    _, client = await start_printer(language="zpl")
    await client.send(zpl("^XA^MMC^XZ", "^XA^FO0,0^FDhalf"))
    fields = await host_status(client)
    assert field(fields, PARTIAL) == "1"
    assert field(fields, PRINT_MODE) == "3"  # cutter


async def test_the_labels_remaining_and_formats_waiting_go_to_zero_once_all_is_out(
    start_printer: StartPrinter,
):
    # GIVEN a very slow printer sent a format of 2 labels, then another format
    printer, client = await start_printer(language="zpl", ms_per_badge=VERY_SLOW_MS)
    first = zpl("^XA^PQ2^FO0,0^FDjob first-01^FS^XZ")
    await client.send(first + LABEL)
    await printer.wait_until(lambda p: p.status()["printing"] and p.status()["queued"] == 2)
    # WHEN the host asks ~HS while the first label prints
    fields = await host_status(client)
    # THEN both labels of the batch are to come, and one format waits
    assert field(fields, LABELS_REMAINING) == "00000002"
    assert field(fields, FORMATS_WAITING) == "001"
    # AND once everything is out, both counts are 0: the labels are printed
    printer.ms_per_badge = 0
    await printer.wait_until(lambda p: len(p.printed) == 3)
    fields = await host_status(client)
    assert (field(fields, LABELS_REMAINING), field(fields, FORMATS_WAITING)) == ("00000000", "000")
    assert [badge.job_id for badge in printer.printed] == ["first-01", "first-01", "zpl-0001"]


async def test_given_a_full_receive_buffer_then_the_buffer_full_flag_is_up(
    start_printer: StartPrinter,
):
    # GIVEN a paused Zebra with a 64-byte buffer (it keeps what it reads, prints nothing)
    printer, client = await start_printer(language="zpl", fault=Fault.PAUSED, buffer_bytes=64)
    # WHEN a 90-byte format and ~HS arrive in one segment
    await client.send(zpl("^XA^FO0,0^FD", "x" * 70, "^FS^XZ") + b"~HS")
    fields = host_status_fields(await client.read_until(ETX + CRLF, times=3))
    # THEN the format waits in a buffer that is full
    assert field(fields, BUFFER_FULL) == "1"
    assert field(fields, FORMATS_WAITING) == "001"
    assert (field(fields, PAUSE), printer.printed) == ("1", [])


async def test_the_label_length_reported_is_the_one_in_force(start_printer: StartPrinter):
    _, client = await start_printer(language="zpl", media=Media(300, 1200, 900))
    assert field(await host_status(client), LABEL_LENGTH) == "0900"  # 3 in at 300 dpi
    await client.send(zpl("^XA^LL1218^XZ"))
    assert field(await host_status(client), LABEL_LENGTH) == "1218"


async def test_given_write_only_then_the_zebra_answers_no_query(start_printer: StartPrinter):
    printer, client = await start_printer(language="zpl", write_only=True)
    await client.send(b"~HS" + LABEL)
    await printer.wait_until(lambda p: len(p.printed) == 1)
    printer.write_only = False
    await client.send(b"~HQES")
    assert (await client.read_until(ETX + CRLF)).startswith(b"\x02\r\n")
