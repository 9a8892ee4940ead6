from __future__ import annotations

import contextlib
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from badgeline.coordinator.app import create_app
from badgeline.coordinator.config import CoordinatorSettings
from badgeline.coordinator.store.connection import connected
from tests.cluster.servers import LocalCluster
from tests.conftest import KNOWN_TEST_PRINTERS, test_tokens

MakeVenue = Callable[..., Awaitable[TestClient[Any, Any]]]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    local = LocalCluster(tmp_path_factory.mktemp("cluster"))
    try:
        local.start()
        yield local
    finally:
        local.stop()


@pytest.fixture
def venues(cluster: LocalCluster) -> tuple[str, str]:
    """Two fresh venue names whose hash slots live on different masters."""
    first = "hall-" + secrets.token_hex(4)
    while True:
        second = "hall-" + secrets.token_hex(4)
        if cluster.master_of(second) != cluster.master_of(first):
            return first, second


def cluster_settings(cluster: LocalCluster, venue: str, tmp_path: Path) -> CoordinatorSettings:
    return CoordinatorSettings(
        venue=venue, redis_mode="cluster", redis_url=cluster.url, state_dir=tmp_path / venue,
        tokens=test_tokens(), known_printers=KNOWN_TEST_PRINTERS, lease_scan_interval_s=0.1,
        retry_backoff_unit_s=0.01, heartbeat_interval_s=30.0, ack_grace_s=1.0,
        monitor_interval_s=0.05, mdns=False,
    )  # fmt: skip


@pytest.fixture
async def connections() -> AsyncIterator[contextlib.AsyncExitStack]:
    """Holds the venues' Redis connections. Requested before `aiohttp_client`, so it is
    torn down after the apps: their background loops stop before Redis closes."""
    async with contextlib.AsyncExitStack() as stack:
        yield stack


@pytest.fixture
def make_venue(
    cluster: LocalCluster, tmp_path: Path, connections: contextlib.AsyncExitStack,
    aiohttp_client: Any,
) -> MakeVenue:  # fmt: skip
    """A coordinator for one venue on the cluster, connected as `badgeline coordinator`
    connects (redis_mode cluster, one node in redis_url)."""

    async def make(venue: str, **overrides: Any) -> TestClient[Any, Any]:
        settings = cluster_settings(cluster, venue, tmp_path).model_copy(update=overrides)
        redis = await connections.enter_async_context(connected(settings, settings.redis_url))
        test_client: TestClient[Any, Any] = await aiohttp_client(create_app(settings, redis))
        return test_client

    return make
