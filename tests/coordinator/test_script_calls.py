"""Script calls on one server share one pipelined connection (redis_lane.py,
through WaitingConnectionPool.evalsha_once): each caller gets its own reply or
its own error, a script the server forgot is loaded again through redis-py, and
a call whose reply is lost fails instead of running twice."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import pytest
from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from badgeline.coordinator.config import CoordinatorSettings
from badgeline.coordinator.store.lane import ScriptLane
from badgeline.coordinator.store.pool import WaitingConnectionPool
from badgeline.coordinator.store.script_loader import LoadedScript
from tests.helpers import wait_for

INCR = "return redis.call('INCR', KEYS[1])"
# The counter after this call, and the caller's own argument back.
INCR_ECHO = "return {redis.call('INCR', KEYS[1]), ARGV[1]}"
FAIL = "return redis.error_reply('BADGE no such badge')"


@contextlib.asynccontextmanager
async def pool_client(
    url: str, **pool_options: float
) -> AsyncIterator[tuple[WaitingConnectionPool, Redis]]:
    pool = WaitingConnectionPool.from_url(url, timeout=5, **pool_options)
    client = Redis.from_pool(pool)
    try:
        yield pool, client
    finally:
        await client.aclose()


@pytest.fixture
async def admin(settings: CoordinatorSettings) -> AsyncIterator[Redis]:
    """A plain client beside the pool under test: it sees what really ran."""
    client = Redis.from_url(str(settings.redis_url))
    yield client
    await client.aclose()


@pytest.fixture
async def key(settings: CoordinatorSettings, admin: Redis) -> AsyncIterator[str]:
    """The counter the scripts increment, removed after the test."""
    name = f"bl:{{{settings.venue}}}:counter"
    yield name
    await admin.delete(name)


async def newest_client_id(admin: Redis) -> int:
    return max(int(c["id"]) for c in await admin.client_list())


async def lane_connection_id(admin: Redis, opened_after: int) -> int:
    """The id of the one EVALSHA connection opened after client `opened_after`: the
    lane under test. The server is shared by the session, and a connection an earlier
    test left open may have run EVALSHA last too (the suite runs files in any order
    under pytest-xdist)."""
    lane_ids = [int(c["id"]) for c in await admin.client_list()
                if c["cmd"] == "evalsha" and int(c["id"]) > opened_after]  # fmt: skip
    assert len(lane_ids) == 1, lane_ids
    return lane_ids[0]


def lane_of(pool: WaitingConnectionPool) -> ScriptLane:
    lane = pool.lane
    assert lane is not None  # plain bytes replies: the pool pipelines script calls
    return lane


async def test_concurrent_calls_each_get_their_own_reply_in_order(
    settings: CoordinatorSettings,
    key: str,
) -> None:
    async with pool_client(str(settings.redis_url)) as (pool, client):
        script = LoadedScript("incr_echo", 1, client.register_script(INCR_ECHO))
        await script([key], ["warm-up"])  # loads the script
        # WHEN 300 callers call at once
        replies = await asyncio.gather(*(script([key], [f"caller-{n}"]) for n in range(300)))
        # THEN each got the reply to its own call, and Redis ran them in call order
        assert [reply[1] for reply in replies] == [f"caller-{n}".encode() for n in range(300)]
        assert [reply[0] for reply in replies] == list(range(2, 302))
        assert lane_of(pool).connections_opened == 1


async def test_a_script_error_fails_only_its_own_call_and_the_connection_stays(
    settings: CoordinatorSettings,
    key: str,
) -> None:
    async with pool_client(str(settings.redis_url)) as (pool, client):
        failing = LoadedScript("fail", 1, client.register_script(FAIL))
        counting = LoadedScript("incr", 1, client.register_script(INCR))
        await counting([key], [])
        # WHEN a failing call sits between counting calls of the same batch
        outcomes = await asyncio.gather(
            counting([key], []), failing([key], []), counting([key], []),
            return_exceptions=True,
        )  # fmt: skip
        # THEN only that call fails, with the script's error
        assert outcomes[0] == 2 and outcomes[2] == 3
        assert isinstance(outcomes[1], ResponseError) and "no such badge" in str(outcomes[1])
        assert await counting([key], []) == 4
        assert lane_of(pool).connections_opened == 1


async def test_a_script_the_server_forgot_is_loaded_again(
    settings: CoordinatorSettings, key: str
) -> None:
    async with pool_client(str(settings.redis_url)) as (_, client):
        script = LoadedScript("incr", 1, client.register_script(INCR))
        assert await script([key], []) == 1
        # WHEN the server loses its scripts (a restart, a failover to a replica)
        await client.script_flush()
        # THEN the next calls, made together, still run the script once each
        assert sorted(await asyncio.gather(script([key], []), script([key], []))) == [2, 3]
        assert await script([key], []) == 4


async def test_a_cancelled_caller_does_not_shift_the_replies_of_the_others(
    settings: CoordinatorSettings,
    key: str,
) -> None:
    async with pool_client(str(settings.redis_url)) as (_, client):
        script = LoadedScript("incr_echo", 1, client.register_script(INCR_ECHO))
        await script([key], ["warm-up"])
        calls = [asyncio.ensure_future(script([key], [f"caller-{n}"])) for n in range(5)]
        await asyncio.sleep(0)  # every call is made and waits for its reply
        calls[2].cancel()
        done = await asyncio.gather(*calls, return_exceptions=True)
        assert isinstance(done[2], asyncio.CancelledError)
        for n in (0, 1, 3, 4):
            assert done[n][1] == f"caller-{n}".encode()  # type: ignore[index]
        # the cancelled call still went out with the others, and ran: once, never twice
        assert int(await client.get(key) or 0) == 6


class ReplyRelay:
    """A relay to the real Redis that can lose Redis's replies: `hang_up` drops the
    next reply and closes the client's connection, `go_silent` drops replies and
    keeps the connection open (a stopped server, a network gone without a FIN)."""

    def __init__(self, redis_url: str) -> None:
        parts = urlsplit(redis_url)
        assert parts.hostname is not None and parts.port is not None
        self.host, self.redis_port = parts.hostname, parts.port
        self.password = parts.password  # the relay's clients log in through it
        self.hang_up = asyncio.Event()
        self.go_silent = asyncio.Event()
        self._writers: list[asyncio.StreamWriter] = []
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> str:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        login = f":{self.password}@" if self.password else ""
        return f"redis://{login}127.0.0.1:{self._server.sockets[0].getsockname()[1]}/0"

    async def __aexit__(self, *exc: object) -> None:
        for writer in self._writers:
            writer.close()
        assert self._server is not None
        self._server.close()

    async def _relay(
        self, client_in: asyncio.StreamReader, client_out: asyncio.StreamWriter
    ) -> None:
        server_in, server_out = await asyncio.open_connection(self.host, self.redis_port)
        self._writers.extend([client_out, server_out])

        async def to_server() -> None:
            while chunk := await client_in.read(65536):
                server_out.write(chunk)

        async def to_client() -> None:
            while chunk := await server_in.read(65536):
                if self.hang_up.is_set():
                    client_out.close()
                    return
                if not self.go_silent.is_set():
                    client_out.write(chunk)

        await asyncio.gather(to_server(), to_client(), return_exceptions=True)


async def test_a_reply_lost_with_its_connection_fails_the_call_without_a_second_run(
    settings: CoordinatorSettings,
    admin: Redis,
    key: str,
) -> None:
    relay = ReplyRelay(str(settings.redis_url))
    async with relay as relay_url, pool_client(relay_url) as (pool, client):
        script = LoadedScript("incr", 1, client.register_script(INCR))
        assert await script([key], []) == 1
        # WHEN Redis runs the next call but its reply never arrives
        relay.hang_up.set()
        with pytest.raises(RedisConnectionError, match="whether it ran is unknown"):
            await asyncio.wait_for(script([key], []), timeout=10)
        # THEN it ran once and only once: the lane does not send it again
        assert int(await admin.get(key) or 0) == 2
        # AND the next call opens a new connection and runs once
        relay.hang_up.clear()
        assert await script([key], []) == 3
        assert lane_of(pool).connections_opened == 2


async def test_calls_to_a_server_gone_silent_fail_after_the_reply_timeout(
    settings: CoordinatorSettings,
    admin: Redis,
    key: str,
) -> None:
    relay = ReplyRelay(str(settings.redis_url))
    async with (
        relay as relay_url,
        pool_client(relay_url, script_reply_timeout_s=0.3) as (pool, client),
    ):
        script = LoadedScript("incr", 1, client.register_script(INCR))
        assert await script([key], []) == 1
        # WHEN Redis's answers stop coming, with the connection still open
        relay.go_silent.set()
        calls = asyncio.gather(script([key], []), script([key], []),
                               return_exceptions=True)  # fmt: skip
        # THEN every waiting call fails as a store error, not never
        outcomes = await asyncio.wait_for(calls, timeout=10)
        assert all(isinstance(o, RedisTimeoutError) for o in outcomes), outcomes
        # AND once Redis answers again, the next call runs on a new connection
        relay.go_silent.clear()
        assert await script([key], []) == 4  # the two silent calls did run
        assert lane_of(pool).connections_opened == 2


async def test_a_connection_the_server_closed_while_idle_is_replaced(
    settings: CoordinatorSettings,
    admin: Redis,
    key: str,
) -> None:
    before = await newest_client_id(admin)
    async with pool_client(str(settings.redis_url)) as (pool, client):
        # Loaded beforehand, or the FALL_BACK's pooled connection runs EVALSHA too
        # (the test passed only after another test had loaded INCR).
        await admin.script_load(INCR)
        script = LoadedScript("incr", 1, client.register_script(INCR))
        assert await script([key], []) == 1
        lane = lane_of(pool)
        # WHEN the server drops the lane's connection (a restart, a CLIENT KILL)
        lane_id = await lane_connection_id(admin, before)
        assert await admin.client_kill_filter(_id=str(lane_id)) == 1

        async def noticed() -> bool:
            return not lane.connected

        await wait_for(noticed)
        # THEN the next call runs on a new connection
        assert await script([key], []) == 2
        assert lane.connections_opened == 2


async def test_calls_made_while_redis_is_unreachable_fail_together(
    settings: CoordinatorSettings,
) -> None:
    # GIVEN a port nothing listens on
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    async with pool_client(f"redis://127.0.0.1:{port}/0") as (pool, client):
        script = LoadedScript("incr", 1, client.register_script(INCR))
        # WHEN several calls are made at once THEN each fails as a store error
        outcomes = await asyncio.wait_for(asyncio.gather(
            *(script(["bl:{v}:k"], []) for _ in range(5)), return_exceptions=True,
        ), timeout=30)  # fmt: skip
        assert all(isinstance(outcome, RedisConnectionError) for outcome in outcomes), outcomes
        assert lane_of(pool).connections_opened == 0


async def test_a_push_message_on_the_lane_does_not_take_a_callers_reply(
    settings: CoordinatorSettings,
    admin: Redis,
    key: str,
) -> None:
    # redis-py 8 opens connections with RESP3 (HELLO 3), where the server may push
    # messages nobody asked for: maintenance notices (CLIENT MAINT_NOTIFICATIONS,
    # which redis-py turns on by itself where the server has it), client-tracking
    # invalidations. Here the real server pushes invalidations at the lane because
    # another client redirects its tracking there.
    tracker = Redis.from_url(str(settings.redis_url), single_connection_client=True)
    before = await newest_client_id(admin)
    try:
        async with pool_client(str(settings.redis_url)) as (pool, client):
            await admin.script_load(INCR_ECHO)  # no FALL_BACK: only the lane runs EVALSHA
            script = LoadedScript("incr_echo", 1, client.register_script(INCR_ECHO))
            await script([key], ["warm-up"])
            lane_id = await lane_connection_id(admin, before)
            await tracker.execute_command("CLIENT", "TRACKING", "ON", "REDIRECT", lane_id)
            await tracker.get(key)  # tracked: the next change to it pushes an invalidation
            # WHEN calls wait on the lane while the server pushes a message to it
            replies = await asyncio.wait_for(asyncio.gather(
                *(script([key], [f"caller-{n}"]) for n in range(5)), return_exceptions=True,
            ), timeout=10)  # fmt: skip
            # THEN each caller still gets the reply to its own call
            assert [r[1] for r in replies] == [f"caller-{n}".encode() for n in range(5)], replies  # type: ignore[index]
            assert lane_of(pool).connections_opened == 1
    finally:
        await tracker.aclose()


async def test_calls_fail_after_the_reply_timeout_when_a_new_connection_hears_nothing(
    settings: CoordinatorSettings,
    admin: Redis,
    key: str,
) -> None:
    relay = ReplyRelay(str(settings.redis_url))
    async with (
        relay as relay_url,
        pool_client(relay_url, script_reply_timeout_s=0.3) as (_, client),
    ):
        script = LoadedScript("incr", 1, client.register_script(INCR))
        assert await script([key], []) == 1
        relay.hang_up.set()  # the lane's connection is lost
        with pytest.raises(RedisConnectionError):
            await asyncio.wait_for(script([key], []), timeout=10)
        relay.hang_up.clear()
        # WHEN the server accepts the next connection but never answers (a
        # stopped server: the kernel still accepts; a network black hole)
        relay.go_silent.set()
        calls = asyncio.gather(script([key], []), script([key], []),
                               return_exceptions=True)  # fmt: skip
        # THEN the calls fail as a store error after the reply timeout, not never
        outcomes = await asyncio.wait_for(calls, timeout=5)
        assert all(isinstance(o, RedisTimeoutError) for o in outcomes), outcomes
