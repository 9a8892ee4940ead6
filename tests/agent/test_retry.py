"""Back-off and outage logging: exponential with jitter and a cap; one line per state change."""

from __future__ import annotations

import asyncio
import logging
import random

import pytest

from badgeline.agent.retry import Backoff, OutageLog, sleep_unless_stopped, unless_stopped


def test_backoff_doubles_with_jitter_up_to_its_cap_and_resets() -> None:
    backoff = Backoff(0.5, 8.0, rng=random.Random(7))
    delays = [backoff.next_delay() for _ in range(8)]
    ceilings = [0.5, 1, 2, 4, 8, 8, 8, 8]
    for delay, ceiling in zip(delays, ceilings, strict=True):
        assert ceiling / 2 <= delay <= ceiling
    # Jitter: agents that lost the coordinator together do not come back in step.
    assert len({round(delay, 6) for delay in delays[4:]}) > 1
    backoff.reset()
    assert backoff.next_delay() <= 0.5


def events(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str]]:
    return [(r.fields["event"], r.fields.get("problem", "")) for r in caplog.records
            if hasattr(r, "fields")]  # fmt: skip


def test_an_outage_is_logged_when_it_starts_changes_and_ends_not_per_attempt(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="badgeline.events")
    outage = OutageLog("ack", printer_id="printer-a")
    # GIVEN a hundred failed attempts, with one change of cause
    for _ in range(50):
        outage.failed("ClientConnectorError: connection refused")
    for _ in range(50):
        outage.failed("HTTP 503 store_unavailable: redis is down")
    outage.succeeded()
    outage.succeeded()
    # THEN three lines: down, still down (another cause), up again after 100 attempts
    logged = events(caplog)
    assert [event for event, _ in logged] == ["link_down", "link_still_down", "link_up"]
    assert caplog.records[-1].fields["failed_attempts"] == 100  # type: ignore[attr-defined]


async def test_waits_end_as_soon_as_a_stop_begins() -> None:
    stopping = asyncio.Event()
    never = asyncio.get_running_loop().create_future()
    waiting = asyncio.create_task(unless_stopped(never, stopping))
    sleeping = asyncio.create_task(sleep_unless_stopped(3600, stopping))
    stopping.set()
    assert await asyncio.wait_for(waiting, 5) is None and never.cancelled()
    assert await asyncio.wait_for(sleeping, 5) is False
    assert await sleep_unless_stopped(0, asyncio.Event()) is True
