"""GS ( H process ID responses and the bounded receive buffer: buffered is not printed."""

from __future__ import annotations

import asyncio
from pathlib import Path

from badgeline.emulator import Fault, PrinterEmulator
from tests.emulator.conftest import PrinterClient
from tests.emulator.escpos_builders import badge_image, badge_job, status_query

VERY_SLOW_MS = 600_000  # a badge never finishes unless the test speeds the printer up


def process_id_request(process_id: bytes) -> bytes:
    return b"\x1d(H\x06\x00\x30\x30" + process_id


def response(process_id: bytes) -> bytes:
    return b"\x37\x22" + process_id + b"\x00"


async def test_the_process_id_is_answered_only_once_the_badge_before_it_is_out(
    emulator: PrinterEmulator, connect
):
    # GIVEN a badge on a printer that is still printing it
    emulator.ms_per_badge = VERY_SLOW_MS
    client = await connect()
    await client.send(badge_job("slow") + process_id_request(b"0001") + status_query(1))
    # WHEN the printer answers the status query (real-time: at once)
    assert await client.read_exactly(1) == b"\x12"
    # THEN the badge is not out and the process ID is not answered yet
    assert emulator.printed == [] and emulator.status()["process_ids_answered"] == 0
    # AND once the badge comes out, the response follows
    emulator.ms_per_badge = 0
    assert await client.read_exactly(7) == response(b"0001")
    assert [badge.job_id for badge in emulator.printed] == ["slow"]


async def test_a_fault_clears_the_buffer_and_its_process_ids_are_never_answered(
    emulator: PrinterEmulator, connect
):
    # GIVEN a badge printing slowly, a second one waiting, and a process ID after them
    emulator.ms_per_badge = VERY_SLOW_MS
    client = await connect()
    await client.send(badge_job("on-head") + badge_job("waiting") + process_id_request(b"0001"))
    await emulator.wait_until(lambda p: p.status()["printing"] and p.status()["queued"] == 1)
    # WHEN the paper runs out, and is put back
    emulator.fault = Fault.PAPER_OUT
    await emulator.wait_until(lambda p: p.status()["discarded"] == 2)
    emulator.fault = Fault.NONE
    emulator.ms_per_badge = 0
    # THEN both badges are lost, the process ID was dropped, and a new one is answered
    await client.send(process_id_request(b"0002"))
    assert await client.read_exactly(7) == response(b"0002")
    status = emulator.status()
    assert emulator.printed == []
    assert (status["process_ids_answered"], status["process_ids_dropped"]) == (1, 1)
    assert status["held_bytes"] == 0


async def test_a_full_buffer_stops_the_printer_reading(tmp_path: Path):
    # GIVEN a printer with a 1 KiB buffer, printing a 5 KiB badge very slowly
    emulator = PrinterEmulator(
        "127.0.0.1", 0, 0, tmp_path / "out", ms_per_badge=VERY_SLOW_MS, buffer_bytes=1024
    )
    async with emulator:
        reader, writer = await asyncio.open_connection("127.0.0.1", emulator.port)
        client = PrinterClient(reader, writer)
        image = badge_image(width=384, height=100)  # 48 bytes a row
        await client.send(badge_job("first", image) + badge_job("second", image) + status_query(1))
        await emulator.wait_until(lambda p: p.status()["printing"])
        # THEN the second badge stays out of the printer while the first holds its buffer
        status = emulator.status()
        assert status["queued"] == 0 and status["held_bytes"] > 1024
        assert status["status_queries"] == 0  # queued behind the data, as over TCP
        # AND once the first is out, the rest comes in and prints
        emulator.ms_per_badge = 0
        assert await client.read_exactly(1) == b"\x12"
        await emulator.wait_until(lambda p: len(p.printed) == 2)
        assert [badge.job_id for badge in emulator.printed] == ["first", "second"]
        await client.close()
