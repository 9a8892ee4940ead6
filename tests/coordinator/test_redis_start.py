"""A coordinator started before its Redis answers waits for it (a venue server
booting, a Redis restarting), then gives up after REDIS_START_WAIT_S."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
from pathlib import Path

import pytest
from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError

from badgeline.coordinator import main as coordinator_main
from badgeline.coordinator.config import ConfigError, CoordinatorSettings
from badgeline.coordinator.store import connection as redis_client
from badgeline.coordinator.store.connection import connected
from badgeline.coordinator.store.embedded import EmbeddedRedis, free_port
from badgeline.coordinator.store.pool import WaitingConnectionPool
from badgeline.coordinator.store.script_loader import LoadedScript
from badgeline.log import EVENT_LOGGER, JsonLineFormatter
from tests.helpers import wait_for


def events(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [json.loads(JsonLineFormatter().format(r))["event"] for r in caplog.records
            if r.name == EVENT_LOGGER]  # fmt: skip


async def test_a_coordinator_started_before_its_redis_waits_for_it(
    settings: CoordinatorSettings, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=EVENT_LOGGER)
    port = free_port()
    late = EmbeddedRedis(tmp_path / "late-redis", port=port)

    async def start_coordinator() -> bool:
        async with connected(settings, late.url) as redis:
            return bool(await redis.ping())

    # GIVEN a coordinator starting while nothing answers on its Redis port
    starting = asyncio.create_task(start_coordinator())
    try:

        async def said_waiting() -> bool:
            return "redis_unreachable_at_start" in events(caplog)

        await wait_for(said_waiting)
        assert not starting.done()
        # WHEN Redis comes up THEN the coordinator carries on with it
        await asyncio.to_thread(late.start)
        assert await asyncio.wait_for(starting, timeout=15) is True
        assert events(caplog).count("redis_unreachable_at_start") == 1  # one line, not one a try
        assert "redis_reachable" in events(caplog)
    finally:
        starting.cancel()
        await asyncio.to_thread(late.stop)


async def test_a_redis_that_never_comes_fails_the_start_after_the_wait(
    settings: CoordinatorSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(redis_client, "REDIS_START_WAIT_S", 0.3)
    with pytest.raises(RedisConnectionError):
        async with connected(settings, f"redis://127.0.0.1:{free_port()}/0"):
            pass


@pytest.mark.usefixtures("own_root_logging")  # run() configures the process's logging
def test_the_coordinator_command_then_exits_1_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN `badgeline coordinator` with a redis_url where nothing answers
    monkeypatch.setattr(redis_client, "REDIS_START_WAIT_S", 0.3)
    url = f"redis://127.0.0.1:{free_port()}/0"
    parser = argparse.ArgumentParser()
    coordinator_main.add_arguments(parser)
    args = parser.parse_args(["--redis-url", url, "--port", "0"])
    monkeypatch.setenv("BADGELINE_MDNS", "false")
    # WHEN the wait is over THEN it exits 1 (systemd restarts it) saying what it waited for
    assert coordinator_main.run(args) == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith(f"Redis at {url} did not answer within 0.3 s: ")


async def test_after_a_redis_restart_idle_pooled_connections_do_not_fail_a_request(
    tmp_path: Path,
) -> None:
    # GIVEN a pool with an idle connection, and a script call on the lane, to a Redis
    server = EmbeddedRedis(tmp_path / "restarted-redis")
    await asyncio.to_thread(server.start)
    pool = WaitingConnectionPool.from_url(server.url, timeout=5)
    client = Redis.from_pool(pool)
    key = "bl:{restart}:job"
    try:
        incr = client.register_script("return redis.call('INCR', KEYS[1])")
        script = LoadedScript("incr", 1, incr)
        assert await script([key], []) == 1
        async with client.pipeline(transaction=False) as pipe:  # as JobRecords.get reads
            pipe.get(key)
            assert await pipe.execute() == [b"1"]
        # WHEN Redis is killed and comes back from its AOF
        await asyncio.to_thread(server.kill)
        await asyncio.to_thread(server.start)
        # THEN the next read through the pool works (redis-py replaces the dead idle
        # connection) and so does the next script call (a new lane connection)
        async with client.pipeline(transaction=False) as pipe:
            pipe.get(key)
            assert await pipe.execute() == [b"1"]
        assert await script([key], []) == 2
    finally:
        await client.aclose()
        await asyncio.to_thread(server.stop)


async def test_a_wrong_or_missing_redis_password_stops_start_up_in_one_line(
    settings: CoordinatorSettings, tmp_path: Path
) -> None:
    # GIVEN a Redis that asks for a password
    server = EmbeddedRedis(tmp_path / "locked", password="the-right-one")
    await asyncio.to_thread(server.start)
    try:
        # WHEN the coordinator comes without it, or with another one
        for url in (f"redis://127.0.0.1:{server.port}/0",
                    f"redis://:not-it@127.0.0.1:{server.port}/0"):  # fmt: skip
            # THEN it stops at once, saying what to fix, without the password in the message
            with pytest.raises(ConfigError, match="refused the coordinator's login") as refused:
                async with asyncio.timeout(10), connected(settings, url):
                    pass
            assert "not-it" not in str(refused.value)
    finally:
        await asyncio.to_thread(server.stop)


async def test_the_redis_password_can_come_from_a_file(
    settings: CoordinatorSettings, tmp_path: Path
) -> None:
    # GIVEN a Redis with a password, and that password in a file (a systemd credential)
    server = EmbeddedRedis(tmp_path / "locked", password="kept-in-a-file")
    await asyncio.to_thread(server.start)
    secret = tmp_path / "redis-password"
    secret.write_text("kept-in-a-file\n")
    try:
        # WHEN redis_url has no password and redis_password_file names the file
        url = f"redis://127.0.0.1:{server.port}/0"
        with_file = settings.model_copy(update={"redis_url": url, "redis_password_file": secret})
        # THEN the coordinator logs in with it
        async with connected(with_file, url) as redis:
            assert await redis.ping()
    finally:
        await asyncio.to_thread(server.stop)
