from __future__ import annotations

from typing import Any

import pytest
from aiohttp.test_utils import TestClient
from redis.asyncio import Redis

from badgeline.coordinator.app import create_app
from badgeline.coordinator.config import CoordinatorSettings


@pytest.fixture
async def client(
    aiohttp_client: Any, settings: CoordinatorSettings, redis: Redis
) -> TestClient[Any, Any]:
    test_client: TestClient[Any, Any] = await aiohttp_client(create_app(settings, redis))
    return test_client
