"""Fixtures for the operator tests: `make_venue(**settings)` starts a
coordinator on a real socket for the test's venue and stops it after."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from aiohttp import ClientSession, web
from redis.asyncio import Redis

from badgeline.coordinator.app import create_app
from badgeline.coordinator.config import CoordinatorSettings
from tests.ops.venue import Venue, serve

MakeVenue = Callable[..., Awaitable[Venue]]

# Fast enough for a test to watch things happen, slow enough that a played
# agent heartbeating every 0.2 s never misses one on a loaded machine.
OPS_SETTINGS: dict[str, Any] = {
    "heartbeat_interval_s": 1.0, "monitor_interval_s": 0.05, "ack_grace_s": 0.3,
    "lease_scan_interval_s": 0.1, "retry_backoff_unit_s": 0.01,
}  # fmt: skip


# `redis` first: it is torn down after the venue, as in production.
@pytest.fixture
async def make_venue(redis: Redis, settings: CoordinatorSettings) -> AsyncIterator[MakeVenue]:
    runners: list[web.AppRunner] = []
    venues: list[Venue] = []

    async def make(**overrides: Any) -> Venue:
        tuned = settings.model_copy(update={**OPS_SETTINGS, **overrides})
        runner, url = await serve(create_app(tuned, redis))
        runners.append(runner)
        venue = Venue(url=url, session=ClientSession())
        venues.append(venue)
        return venue

    yield make
    for venue in venues:
        for agent in venue.agents.values():
            await agent.stop()
        await venue.session.close()
    for runner in runners:
        await runner.cleanup()


@pytest.fixture
async def venue(make_venue: MakeVenue) -> Venue:
    return await make_venue()
