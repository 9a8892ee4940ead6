"""Script calls on one server go straight onto a pooled connection
(WaitingConnectionPool.evalsha_once), fall back to redis-py's path to load a
script the server forgot, and never run a script twice on their own."""

from __future__ import annotations

import pytest
from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError

from badgeline.coordinator.config import CoordinatorSettings
from badgeline.coordinator.redis_client import WaitingConnectionPool
from badgeline.coordinator.script_loader import LoadedScript

INCR = "return redis.call('INCR', KEYS[1])"
FAIL = "return redis.error_reply('BADGE no such badge')"


async def test_a_script_the_server_forgot_is_loaded_again(settings: CoordinatorSettings) -> None:
    client = Redis.from_pool(WaitingConnectionPool.from_url(str(settings.redis_url), timeout=5))
    key = f"bl:{{{settings.venue}}}:counter"
    try:
        script = LoadedScript("incr", 1, client.register_script(INCR))
        assert await script([key], []) == 1
        # WHEN the server loses its scripts (a restart, a failover to a replica)
        await client.script_flush()
        # THEN the next call still runs the script, once
        assert await script([key], []) == 2
        assert await script([key], []) == 3
    finally:
        await client.delete(key)
        await client.aclose()


async def test_a_dropped_connection_fails_the_call_without_a_second_run_then_is_replaced(
    settings: CoordinatorSettings,
) -> None:
    pool = WaitingConnectionPool.from_url(str(settings.redis_url), timeout=5)
    client = Redis.from_pool(pool)
    admin = Redis.from_url(str(settings.redis_url))
    key = f"bl:{{{settings.venue}}}:counter"
    try:
        script = LoadedScript("incr", 1, client.register_script(INCR))
        assert await script([key], []) == 1
        # WHEN the server closes the pool's connection
        connection = await pool.get_connection()
        await connection.send_command("CLIENT", "ID")
        client_id = await connection.read_response()
        await pool.release(connection)
        assert await admin.client_kill_filter(_id=client_id) == 1
        # THEN the call fails as a store error (the HTTP layer's 503): a call whose
        # reply is lost is never run again here, since it may have run already
        with pytest.raises(RedisConnectionError):
            await script([key], [])
        # and the next call gets a new connection and runs the script once
        assert await script([key], []) == 2
    finally:
        await client.delete(key)
        await client.aclose()
        await admin.aclose()


async def test_a_script_error_reaches_the_caller_and_the_connection_stays(
    settings: CoordinatorSettings,
) -> None:
    pool = WaitingConnectionPool.from_url(str(settings.redis_url), timeout=5, max_connections=1)
    client = Redis.from_pool(pool)
    key = f"bl:{{{settings.venue}}}:counter"
    try:
        failing = LoadedScript("fail", 1, client.register_script(FAIL))
        counting = LoadedScript("incr", 1, client.register_script(INCR))
        with pytest.raises(ResponseError, match="no such badge"):
            await failing([key], [])
        connection = await pool.get_connection()
        await pool.release(connection)
        assert await counting([key], []) == 1
        again = await pool.get_connection()
        await pool.release(again)
        assert again is connection  # the one connection, not replaced
    finally:
        await client.delete(key)
        await client.aclose()
