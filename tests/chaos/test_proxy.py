"""The fault proxy relays bytes both ways, and `cut` really cuts: open connections
are reset and new ones are closed on arrival, until `heal`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from tests.chaos.harness.proxy import FaultProxy


@pytest.fixture
async def echo_port() -> AsyncIterator[int]:
    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(1024):
            writer.write(data)
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(echo, "127.0.0.1", 0)
    yield server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()


@pytest.fixture
async def proxy(echo_port: int) -> AsyncIterator[FaultProxy]:
    started = FaultProxy(echo_port)
    await started.start()
    yield started
    await started.stop()


async def round_trip(port: int, payload: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(payload)
        await writer.drain()
        return await asyncio.wait_for(reader.readexactly(len(payload)), 5)
    finally:
        writer.close()


async def closed_by_peer(reader: asyncio.StreamReader) -> bool:
    try:
        return await asyncio.wait_for(reader.read(1024), 5) == b""
    except ConnectionError:
        return True


async def test_relays_bytes_both_ways(proxy: FaultProxy) -> None:
    payload = bytes(range(256)) * 300  # larger than one read
    assert await round_trip(proxy.port, payload) == payload
    assert proxy.connections_total == 1


async def test_cut_resets_open_connections_and_refuses_new_ones_until_healed(
    proxy: FaultProxy,
) -> None:
    # GIVEN a connection that works
    reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
    writer.write(b"ping")
    assert await asyncio.wait_for(reader.readexactly(4), 5) == b"ping"

    # WHEN the link is cut
    proxy.cut()

    # THEN the open connection is gone
    assert await closed_by_peer(reader)
    writer.close()
    # AND a new one is accepted and closed at once, without reaching the server
    reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
    writer.write(b"hello")
    assert await closed_by_peer(reader)
    writer.close()
    assert proxy.refused_total == 1

    # WHEN the link heals THEN bytes flow again
    proxy.heal()
    assert await round_trip(proxy.port, b"again") == b"again"


async def test_an_unreachable_upstream_looks_like_a_reset() -> None:
    # a port nobody listens on: the proxy's upstream connect fails
    probe = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    dead_port = probe.sockets[0].getsockname()[1]
    probe.close()
    await probe.wait_closed()
    proxy = FaultProxy(dead_port)
    await proxy.start()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
        assert await closed_by_peer(reader)
        writer.close()
    finally:
        await proxy.stop()
