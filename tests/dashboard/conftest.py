"""Fixtures for the dashboard: the coordinator app on a real socket and a
signed-in operator session (cookie jar + CSRF token), all over real HTTP."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp.test_utils import TestClient
from redis.asyncio import Redis

from badgeline.coordinator.app import create_app
from badgeline.coordinator.config import CoordinatorSettings
from tests.conftest import OPERATOR_TOKEN

Client = TestClient[Any, Any]


# `redis` before `aiohttp_client`: the app stops before its Redis client closes.
@pytest.fixture
async def client(redis: Redis, settings: CoordinatorSettings, aiohttp_client: Any) -> Client:
    test_client: Client = await aiohttp_client(create_app(settings, redis))
    return test_client


async def sign_in(client: Client, token: str = OPERATOR_TOKEN) -> str:
    """Sign in through the login form; returns the session's CSRF token."""
    response = await client.post("/dashboard/login", data={"token": token},
                                 allow_redirects=False)  # fmt: skip
    assert response.status == 303, await response.text()
    info = await client.get("/dashboard/session")
    assert info.status == 200, await info.text()
    csrf: str = (await info.json())["csrf_token"]
    return csrf


@pytest.fixture
async def csrf(client: Client) -> str:
    return await sign_in(client)
