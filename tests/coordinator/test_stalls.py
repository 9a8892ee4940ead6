"""Stall metrics: GC pauses and event-loop lag are measured, not guessed."""

from __future__ import annotations

import asyncio
import gc
import time

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from badgeline.coordinator.control.stalls import GC_PAUSES, LoopLag, StallCollector
from tests.helpers import wait_for


def _samples(lag: LoopLag) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    registry = CollectorRegistry()
    registry.register(StallCollector(lag))
    text = generate_latest(registry).decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _over(samples: dict, name: str, bound: str, **labels: str) -> float:
    """Observations above `bound` seconds: the +Inf count minus the bucket's."""
    labels_inf = tuple(sorted({**labels, "le": "+Inf"}.items()))
    labels_le = tuple(sorted({**labels, "le": bound}.items()))
    return samples[(name + "_bucket", labels_inf)] - samples[(name + "_bucket", labels_le)]


async def test_a_full_collection_is_timed_as_a_generation_2_pause() -> None:
    GC_PAUSES.install()
    before = _samples(LoopLag())[("badgeline_gc_pause_seconds_count", (("generation", "2"),))]
    gc.collect()
    after = _samples(LoopLag())[("badgeline_gc_pause_seconds_count", (("generation", "2"),))]
    assert after == before + 1


async def test_a_blocked_event_loop_shows_as_lag() -> None:
    lag = LoopLag(interval_s=0.02)
    lag.start()
    try:
        # WHEN a callback holds the loop for 150 ms (what a full GC pass or a slow
        # handler does to every request in flight)
        await asyncio.sleep(0.05)
        time.sleep(0.15)

        # THEN the probe records a tick more than 0.1 s late
        async def seen() -> bool:
            return _over(_samples(lag), "badgeline_event_loop_lag_seconds", "0.1") >= 1

        await wait_for(seen, timeout_s=5)
    finally:
        await lag.stop()
