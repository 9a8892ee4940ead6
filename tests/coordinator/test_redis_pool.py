"""The coordinator's Redis pool: past its size a command waits for a connection
to come back (up to redis_pool_wait_s), then fails as a store outage (503)."""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlsplit

import pytest
from redis.asyncio import Redis
from redis.asyncio.connection import AbstractConnection
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import DataError
from redis.exceptions import TimeoutError as RedisTimeoutError

from badgeline.coordinator.config import CoordinatorSettings
from badgeline.coordinator.store.pool import HiredisPacking, WaitingConnectionPool


async def test_an_exhausted_pool_waits_for_a_returned_connection(
    settings: CoordinatorSettings,
) -> None:
    pool = WaitingConnectionPool.from_url(settings.redis_url, max_connections=3, timeout=30)
    try:
        # GIVEN every connection of the pool taken
        held = [await pool.get_connection() for _ in range(3)]
        # WHEN two more commands ask for one
        waiting = [asyncio.create_task(pool.get_connection()) for _ in range(2)]
        await asyncio.sleep(0)
        assert not any(task.done() for task in waiting)
        # THEN each gets the next connection handed back, and a command still runs on it
        await pool.release(held.pop())
        first = await asyncio.wait_for(asyncio.shield(asyncio.wait(
            waiting, return_when=asyncio.FIRST_COMPLETED)), timeout=5)  # fmt: skip
        assert len(first[0]) == 1
        await pool.release(held.pop())
        connections = await asyncio.wait_for(asyncio.gather(*waiting), timeout=5)
        await connections[0].send_command("PING")
        assert await connections[0].read_response() == b"PONG"
        for connection in [*connections, *held]:
            await pool.release(connection)
        assert len(pool._in_use_connections) == 0
    finally:
        await pool.disconnect()


async def test_a_pool_that_stays_exhausted_fails_the_command_after_the_wait(
    settings: CoordinatorSettings,
) -> None:
    pool = WaitingConnectionPool.from_url(settings.redis_url, max_connections=2, timeout=0.2)
    client = Redis.from_pool(pool)
    try:
        held = [await pool.get_connection() for _ in range(2)]
        with pytest.raises(RedisConnectionError, match="redis_max_connections"):
            await client.ping()
        await pool.release(held.pop())
        assert await client.ping() is True  # and the pool works again once one is back
        await pool.release(held.pop())
    finally:
        await client.aclose()


async def test_the_pool_packs_commands_byte_for_byte_as_redis_py_does(
    settings: CoordinatorSettings,
) -> None:
    pool = WaitingConnectionPool.from_url(settings.redis_url, max_connections=2, timeout=5)
    client = Redis.from_pool(pool)
    try:
        connection = await pool.get_connection()
        assert isinstance(connection, HiredisPacking)
        # Every type the coordinator sends, a two-word command name, and bytes
        # hiredis does not take (bytearray, memoryview) or refuses (bool).
        commands: list[tuple[Any, ...]] = [
            ("EVALSHA", "f" * 40, 2, "bl:{v}:k", "é ✓", 100, -5, 0.93, 1e-7, 2**70, b"\x00\r\n"),
            ("CONFIG GET", "appendfsync"),
            (b"CLIENT LIST",),
            ("SET", bytearray(b"k"), memoryview(b"v")),
        ]
        for command in commands:
            packed = b"".join(bytes(chunk) for chunk in connection.pack_command(*command))
            reference = b"".join(bytes(chunk) for chunk in
                                 AbstractConnection.pack_command(connection, *command))  # fmt: skip
            assert packed == reference, command
        with pytest.raises(DataError):
            connection.pack_command("SET", "k", True)
        await pool.release(connection)
        # AND a value written through it reads back unchanged
        key = f"bl:{{{settings.venue}}}:packing"
        await client.set(key, "é ✓ 0.93")
        assert await client.get(key) == "é ✓ 0.93".encode()
        await client.delete(key)
    finally:
        await client.aclose()


async def test_a_send_the_server_does_not_read_times_out_and_drops_the_connection(
    settings: CoordinatorSettings,
) -> None:
    # GIVEN a relay to the real Redis that stops reading from the client on demand,
    # and a command far larger than the socket buffers
    target = urlsplit(str(settings.redis_url))
    host, port, password = target.hostname, target.port, target.password
    stalled = asyncio.Event()
    writers: list[asyncio.StreamWriter] = []

    async def pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter, stall: bool) -> None:
        while not (stall and stalled.is_set()) and (chunk := await source.read(65536)):
            sink.write(chunk)

    async def relay(client_in: asyncio.StreamReader, client_out: asyncio.StreamWriter) -> None:
        server_in, server_out = await asyncio.open_connection(host, port)
        writers.extend([client_out, server_out])
        await asyncio.gather(pump(client_in, server_out, True), pump(server_in, client_out, False))

    relay_server = await asyncio.start_server(relay, "127.0.0.1", 0)
    relay_port = relay_server.sockets[0].getsockname()[1]
    pool = WaitingConnectionPool.from_url(
        f"redis://:{password}@127.0.0.1:{relay_port}?socket_timeout=0.3",
        max_connections=1,
        timeout=5,
    )
    try:
        connection = await pool.get_connection()
        assert isinstance(connection, HiredisPacking)
        await connection.send_command("PING")  # the fast path, while Redis reads
        assert await connection.read_response() == b"PONG"
        stalled.set()
        await connection.send_command("PING")  # the relay's last read: it stops here
        await connection.read_response()
        # WHEN the big command is sent THEN the send gives up after socket_timeout, as
        # redis-py's own path does, and the half-sent connection is not reused
        big = connection.pack_command("SET", f"bl:{{{settings.venue}}}:big", b"x" * 2**26)
        with pytest.raises(RedisTimeoutError, match="Timeout writing to socket"):
            await asyncio.wait_for(connection.send_packed_command(big), timeout=10)
        assert not connection.is_connected
        await pool.release(connection)
    finally:
        await pool.disconnect()
        for writer in writers:
            writer.close()
        relay_server.close()
