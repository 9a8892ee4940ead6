"""Fixtures that start real emulators on free loopback ports and always stop them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from aiohttp import ClientSession

from badgeline.emulator import PrinterEmulator

WAIT_S = 10.0


class PrinterClient:
    """One host's TCP connection to the emulated printer."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def read_exactly(self, count: int) -> bytes:
        return await asyncio.wait_for(self.reader.readexactly(count), WAIT_S)

    async def read_until(self, separator: bytes, times: int = 1) -> bytes:
        reply = b""
        for _ in range(times):
            reply += await asyncio.wait_for(self.reader.readuntil(separator), WAIT_S)
        return reply

    async def finish(self) -> None:
        """Half-close and wait for the printer to close: it has then read everything."""
        self.writer.write_eof()
        await asyncio.wait_for(self.reader.read(), WAIT_S)
        await self.close()

    async def close(self) -> None:
        self.writer.close()
        await self.writer.wait_closed()


@pytest.fixture
async def emulator(tmp_path: Path) -> AsyncIterator[PrinterEmulator]:
    printer = PrinterEmulator("127.0.0.1", 0, 0, tmp_path / "printed")
    await printer.start()
    try:
        yield printer
    finally:
        await printer.stop()


@pytest.fixture
async def connect(
    emulator: PrinterEmulator,
) -> AsyncIterator[Callable[[], Awaitable[PrinterClient]]]:
    clients: list[PrinterClient] = []

    async def open_client() -> PrinterClient:
        reader, writer = await asyncio.open_connection("127.0.0.1", emulator.port)
        clients.append(PrinterClient(reader, writer))
        return clients[-1]

    try:
        yield open_client
    finally:
        for client in clients:
            if not client.writer.is_closing():
                await client.close()


@pytest.fixture
async def control(emulator: PrinterEmulator) -> AsyncIterator[ClientSession]:
    async with ClientSession(f"http://127.0.0.1:{emulator.control_port}") as session:
        yield session


StartPrinter = Callable[..., Awaitable[tuple[PrinterEmulator, PrinterClient]]]


@pytest.fixture
async def start_printer(tmp_path: Path) -> AsyncIterator[StartPrinter]:
    """Start an emulator with these options and connect one host to it; both are
    closed at the end of the test."""
    started: list[tuple[PrinterEmulator, PrinterClient]] = []

    async def start(**options: object) -> tuple[PrinterEmulator, PrinterClient]:
        out = tmp_path / f"printed-{len(started)}"
        printer = PrinterEmulator("127.0.0.1", 0, 0, out, **options)  # type: ignore[arg-type]
        await printer.start()
        reader, writer = await asyncio.open_connection("127.0.0.1", printer.port)
        started.append((printer, PrinterClient(reader, writer)))
        return started[-1]

    try:
        yield start
    finally:
        for printer, client in started:
            if not client.writer.is_closing():
                await client.close()
            await printer.stop()
