"""Upkeep loops carry on through errors, log once per state change, and stop
even when a cancellation is swallowed by the code they run."""

from __future__ import annotations

import asyncio
import logging

import pytest

from badgeline.coordinator.control.upkeep import UpkeepLoop


async def test_stops_when_the_step_turns_cancellation_into_another_error() -> None:
    # GIVEN a step that, like redis-py on a closing connection, turns the
    # cancellation that lands inside it into a ConnectionError
    entered = asyncio.Event()

    async def step() -> None:
        entered.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            raise ConnectionError("connection closed") from None

    loop = UpkeepLoop("swallowing", step, interval_s=0.01)
    loop.start()
    await asyncio.wait_for(entered.wait(), 5)
    # WHEN it is stopped
    await loop.stop(grace_s=5)
    # THEN its task has ended
    assert loop._task is not None and loop._task.done()


async def test_logs_a_failure_once_and_its_recovery_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls = 0
    recovered = asyncio.Event()

    async def step() -> None:
        nonlocal calls
        calls += 1
        if calls <= 5:
            raise RuntimeError("redis down")
        recovered.set()

    caplog.set_level(logging.INFO, logger="badgeline.events")
    loop = UpkeepLoop("flaky", step, interval_s=0.001)
    loop.start()
    await asyncio.wait_for(recovered.wait(), 5)
    await loop.stop()
    events = [r.getMessage() for r in caplog.records]
    assert events.count("flaky_failing") == 1
    assert events.count("flaky_recovered") == 1
