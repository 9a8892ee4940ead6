from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from aiohttp.test_utils import TestClient
from redis.asyncio import Redis

from badgeline.coordinator.app import create_app
from badgeline.coordinator.config import CoordinatorSettings

MakeClient = Callable[..., Awaitable[TestClient[Any, Any]]]


# `redis` comes before `aiohttp_client` so that it is torn down after it: the app
# stops its background loops before its Redis client closes, as in production.
@pytest.fixture
async def client(
    redis: Redis, settings: CoordinatorSettings, aiohttp_client: Any
) -> TestClient[Any, Any]:
    test_client: TestClient[Any, Any] = await aiohttp_client(create_app(settings, redis))
    return test_client


@pytest.fixture
def make_client(redis: Redis, settings: CoordinatorSettings, aiohttp_client: Any) -> MakeClient:
    """A coordinator on a real socket with some settings changed (same venue as `settings`)."""

    async def make(**overrides: Any) -> TestClient[Any, Any]:
        changed = CoordinatorSettings.model_validate({**settings.model_dump(), **overrides})
        test_client: TestClient[Any, Any] = await aiohttp_client(create_app(changed, redis))
        return test_client

    return make
