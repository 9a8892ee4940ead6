"""Starting and stopping emulators in-process, several at once, as the demo does."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from badgeline.emulator import PrinterEmulator
from tests.emulator.escpos_builders import badge_job


async def send(port: int, payload: bytes) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(payload)
    writer.write_eof()
    await reader.read()  # the printer closes once it has read everything
    writer.close()
    await writer.wait_closed()


async def test_given_two_emulators_in_one_process_then_each_records_only_its_own_prints(
    tmp_path: Path,
):
    # GIVEN two printers on distinct free ports
    async with (
        PrinterEmulator(out_dir=tmp_path / "a") as printer_a,
        PrinterEmulator(out_dir=tmp_path / "b") as printer_b,
    ):
        assert len({printer_a.port, printer_a.control_port, printer_b.port}) == 3
        # WHEN each gets its own job
        await asyncio.gather(
            send(printer_a.port, badge_job("for-a")), send(printer_b.port, badge_job("for-b"))
        )
        await printer_a.wait_until(lambda printer: len(printer.printed) == 1)
        await printer_b.wait_until(lambda printer: len(printer.printed) == 1)
        # THEN the records and the pictures stay apart
        assert [badge.job_id for badge in printer_a.printed] == ["for-a"]
        assert [badge.job_id for badge in printer_b.printed] == ["for-b"]
        assert [path.name for path in (tmp_path / "b").iterdir()] == ["000001-for-b.png"]


async def test_given_open_connections_and_a_slow_print_when_stopped_then_it_stops_promptly(
    tmp_path: Path,
):
    # GIVEN a printer busy with a very slow badge and an idle open connection
    printer = PrinterEmulator(out_dir=tmp_path, ms_per_badge=600_000)
    await printer.start()
    reader, writer = await asyncio.open_connection("127.0.0.1", printer.port)
    writer.write(badge_job("never-finishes"))
    await writer.drain()
    await printer.wait_until(lambda emulator: emulator.status()["printing"])
    # WHEN it is stopped
    await asyncio.wait_for(printer.stop(), 10)
    # THEN the host sees its connection closed and nothing was printed
    assert await asyncio.wait_for(reader.read(), 10) == b""
    writer.close()
    await writer.wait_closed()
    assert printer.printed == []


async def test_given_a_control_port_in_use_then_start_fails_with_the_os_error(
    tmp_path: Path,
):
    blocker = await asyncio.start_server(lambda reader, writer: None, "127.0.0.1", 0)
    taken = blocker.sockets[0].getsockname()[1]
    try:
        printer = PrinterEmulator(control_port=taken, out_dir=tmp_path)
        with pytest.raises(OSError):
            await printer.start()
    finally:
        blocker.close()
        await blocker.wait_closed()

    with pytest.raises(RuntimeError):
        _ = printer.port  # a failed start leaves no half-started printer behind
