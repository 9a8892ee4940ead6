"""Sentinel: the embedded binary runs as a sentinel (`--sentinel`), so a
coordinator in redis_mode sentinel is tested through a real failover."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis
from redis.exceptions import ResponseError

from badgeline.coordinator.app import create_app
from badgeline.coordinator.config import ConfigError, CoordinatorSettings
from badgeline.coordinator.store.connection import connected
from badgeline.coordinator.store.keys import VenueKeys
from tests.cluster.servers import LocalSentinel
from tests.conftest import KNOWN_TEST_PRINTERS
from tests.conftest import test_tokens as configured_tokens
from tests.coordinator import flows
from tests.helpers import job_body, wait_for


@pytest.fixture
def sentinel(tmp_path: Path) -> Iterator[LocalSentinel]:
    local = LocalSentinel(tmp_path / "sentinel")
    try:
        local.start()
        yield local
    finally:
        local.stop()


async def _sentinel_ready(sentinels: Redis) -> bool:
    """The sentinel has found the replica and sees it in sync: it can fail over."""
    replicas = await sentinels.sentinel_slaves(LocalSentinel.MASTER_NAME)
    return any("disconnected" not in r["flags"] and r.get("master-link-status") == "ok"
               for r in replicas)  # fmt: skip


async def _failover(sentinels: Redis) -> bool:
    try:
        await sentinels.execute_command("SENTINEL FAILOVER", LocalSentinel.MASTER_NAME)
    except ResponseError:  # NOGOODSLAVE until the sentinel has had the replica's INFO
        return False
    return True


async def _master_port(sentinels: Redis) -> int:
    address = await sentinels.sentinel_get_master_addr_by_name(LocalSentinel.MASTER_NAME)
    return int(address[1])


async def _accepted(client: Any) -> dict[str, Any] | None:
    response = await client.post("/v1/jobs", json=job_body(), headers=flows.KIOSK)
    if response.status != 201:  # a request caught mid-switch may be refused (503)
        return None
    body: dict[str, Any] = await response.json()
    return body


async def test_the_coordinator_keeps_accepting_through_a_sentinel_failover(
    sentinel: LocalSentinel, tmp_path: Path, aiohttp_client: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    caplog.set_level(logging.INFO, logger="badgeline.events")
    sentinel_password_file = tmp_path / "sentinel-password"
    sentinel_password_file.write_text(sentinel.sentinel_password + "\n")
    settings = CoordinatorSettings(
        venue="sentinel-hall", redis_mode="sentinel", redis_sentinels=[sentinel.address],
        redis_sentinel_master=LocalSentinel.MASTER_NAME, state_dir=tmp_path / "state",
        tokens=configured_tokens(), known_printers=KNOWN_TEST_PRINTERS, mdns=False,
        # the master's login: redis_url names the master, the sentinels say where it is
        redis_url=f"redis://:{sentinel.password}@{LocalSentinel.MASTER_NAME}/0",
        # the sentinel's own password, as its requirepass
        redis_sentinel_password_file=sentinel_password_file,
    )  # fmt: skip
    sentinels = Redis(port=sentinel.sentinel.port, password=sentinel.sentinel_password,
                      decode_responses=True)  # fmt: skip
    old_master = Redis(port=sentinel.master.port, password=sentinel.password)
    new_master = Redis(port=sentinel.replica.port, password=sentinel.password)
    try:
        # a master name the sentinels do not know stops start-up
        unknown = settings.model_copy(update={"redis_sentinel_master": "no-such-master"})
        with pytest.raises(ConfigError, match="no-such-master"):
            async with connected(unknown, None):
                pass
        async with connected(settings, None) as redis:
            client = await aiohttp_client(create_app(settings, redis))
            # GIVEN a job accepted through the master and replicated
            before = await flows.submit(client)
            assert await old_master.wait(1, 5000) == 1
            await wait_for(lambda: _sentinel_ready(sentinels), timeout_s=15)
            # WHEN the sentinel fails the master over to the replica
            await wait_for(lambda: _failover(sentinels), timeout_s=15, interval_s=0.2)
            await wait_for(lambda: _is(_master_port(sentinels), sentinel.replica.port), 15)
            # THEN the coordinator drops its connections to the old master
            await wait_for(lambda: _logged(caplog, "redis_master_switched"), timeout_s=5)
            # AND keeps accepting, and what it accepts lands on the new master
            after = [await wait_for(lambda: _accepted(client), timeout_s=10) for _ in range(3)]
            keys = VenueKeys(settings.venue)
            for job in [before, *after]:
                assert await new_master.exists(keys.job(job["job_id"])) == 1, job
            # AND the whole flow still runs there
            leased = await flows.lease(client, max_jobs=10)
            assert [j["job_id"] for j in leased] == [before["job_id"]] + [
                j["job_id"] for j in after
            ]
            await client.close()
    finally:
        for connection in (sentinels, old_master, new_master):
            await connection.aclose()


async def _is(value: Any, expected: Any) -> bool:
    return bool(await value == expected)


async def _logged(caplog: pytest.LogCaptureFixture, message: str) -> bool:
    return any(record.getMessage() == message for record in caplog.records)
