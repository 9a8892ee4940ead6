"""DLE EOT real-time status over TCP, answered as an Epson printer answers it."""

from __future__ import annotations

import pytest

from badgeline.emulator import Fault, PrinterEmulator
from tests.emulator.escpos_builders import badge_job, status_query

# fault -> replies to DLE EOT 1, 2, 3, 4 (bit map documented in emulator/state.py)
EXPECTED_STATUS = {
    Fault.NONE: b"\x12\x12\x12\x12",
    Fault.PAPER_LOW: b"\x12\x12\x12\x1e",
    Fault.JAM: b"\x1a\x52\x1a\x12",
    Fault.COVER_OPEN: b"\x1a\x16\x12\x12",
    Fault.PAPER_OUT: b"\x1a\x32\x12\x7e",
}


@pytest.mark.parametrize("fault", list(EXPECTED_STATUS))
async def test_given_a_fault_when_all_four_statuses_are_queried_then_each_byte_reports_it(
    emulator: PrinterEmulator, connect, fault: Fault
):
    # GIVEN the printer in this fault
    emulator.fault = fault
    client = await connect()
    # WHEN the host asks DLE EOT 1..4 in one write
    await client.send(b"".join(status_query(query) for query in (1, 2, 3, 4)))
    # THEN it gets one byte per query, with the Epson bits for the fault
    assert await client.read_exactly(4) == EXPECTED_STATUS[fault]


@pytest.mark.parametrize("fault", list(EXPECTED_STATUS))
def test_status_bytes_keep_the_fixed_bits_and_decode_with_python_escpos_masks(fault: Fault):
    replies = EXPECTED_STATUS[fault]
    printer_status, _, _, paper = replies

    assert all(byte & 0x93 == 0x12 for byte in replies)  # bits 1, 4 set; 0, 7 clear
    # python-escpos: is_online() and paper_status() masks
    assert (not printer_status & 0x08) == (fault in (Fault.NONE, Fault.PAPER_LOW))
    paper_level = 0 if paper & 0x72 == 0x72 else 1 if paper & 0x1E == 0x1E else 2
    expected_level = {Fault.PAPER_OUT: 0, Fault.PAPER_LOW: 1}.get(fault, 2)
    assert paper_level == expected_level


async def test_given_status_split_across_writes_then_it_is_answered_once_complete(
    emulator: PrinterEmulator, connect
):
    client = await connect()

    for byte in status_query(2):
        await client.send(bytes([byte]))

    assert await client.read_exactly(1) == b"\x12"


async def test_given_an_offline_printer_when_queried_then_it_never_answers(
    emulator: PrinterEmulator, connect
):
    # GIVEN a silent printer that has received a status query
    emulator.fault = Fault.OFFLINE
    client = await connect()
    await client.send(status_query(1))
    await emulator.wait_until(lambda printer: printer.status()["status_queries"] == 1)
    # WHEN it jams and the host asks for the offline cause
    emulator.fault = Fault.JAM
    await client.send(status_query(2))
    # THEN the first byte the host ever receives answers the second query:
    # the first one (which could only have been 0x12 or 0x1A) got nothing
    assert await client.read_exactly(1) == b"\x52"


async def test_given_an_offline_printer_then_it_accepts_connections_and_prints_nothing(
    emulator: PrinterEmulator, connect
):
    emulator.fault = Fault.OFFLINE
    client = await connect()

    await client.send(badge_job("offline-1"))
    await emulator.wait_until(lambda printer: printer.status()["discarded"] == 1)

    assert emulator.printed == []
    assert emulator.status()["connections"] == 1
