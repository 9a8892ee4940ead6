"""What holds up every request at once: garbage-collector pauses and event-loop lag.

One coordinator process serves all its requests on one event loop, so anything
that keeps the loop from running (a full GC pass, a slow callback, a starved
CPU) shows up in every latency tail at the same moment. Two histograms on
`GET /metrics` tell an operator (and bench/bench_accept.py) which it was:

- `badgeline_gc_pause_seconds{generation}`: each collection's duration, timed
  by `gc.callbacks`. Process-wide: one hook per process, however many apps.
- `badgeline_event_loop_lag_seconds`: how late a timer that should fire every
  `LAG_PROBE_INTERVAL_S` actually ran. GC pauses are part of it; lag without
  them is CPU starvation or a slow callback.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time
from bisect import bisect_left
from collections.abc import Iterator
from typing import Any

from prometheus_client.core import HistogramMetricFamily, Metric

LAG_PROBE_INTERVAL_S = 0.1
PAUSE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)


class PauseHistogram:
    """Cumulative counts per bucket, cheap enough to update from a GC callback."""

    def __init__(self) -> None:
        self.counts = [0] * (len(PAUSE_BUCKETS) + 1)  # the last one is +Inf
        self.total_s = 0.0

    def observe(self, seconds: float) -> None:
        self.counts[bisect_left(PAUSE_BUCKETS, seconds)] += 1
        self.total_s += seconds

    def buckets(self) -> list[tuple[str, float]]:
        running, out = 0, []
        for bound, count in zip([*map(str, PAUSE_BUCKETS), "+Inf"], self.counts, strict=True):
            running += count
            out.append((bound, float(running)))
        return out


class GcPauses:
    """Times every collection, per generation. Installed once per process."""

    def __init__(self) -> None:
        self.by_generation = {generation: PauseHistogram() for generation in range(3)}
        self._started = 0.0

    def install(self) -> None:
        if self._on_gc not in gc.callbacks:
            gc.callbacks.append(self._on_gc)

    def _on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        elif self._started:
            self.by_generation[info["generation"]].observe(time.perf_counter() - self._started)


GC_PAUSES = GcPauses()


class LoopLag:
    """A timer that should fire every `interval_s`; how late it ran is the lag."""

    def __init__(self, interval_s: float = LAG_PROBE_INTERVAL_S) -> None:
        self.interval_s = interval_s
        self.histogram = PauseHistogram()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._probe(), name="loop-lag-probe")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _probe(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            due = loop.time() + self.interval_s
            await asyncio.sleep(self.interval_s)
            self.histogram.observe(max(0.0, loop.time() - due))


class StallCollector:
    """Yields both families at scrape time (registered in each app's registry)."""

    def __init__(self, lag: LoopLag) -> None:
        self.lag = lag

    def collect(self) -> Iterator[Metric]:
        pauses = HistogramMetricFamily(
            "badgeline_gc_pause_seconds",
            "Garbage-collector pauses of this process, by generation",
            labels=["generation"],
        )
        for generation, histogram in GC_PAUSES.by_generation.items():
            pauses.add_metric([str(generation)], histogram.buckets(), histogram.total_s)
        yield pauses
        lag = HistogramMetricFamily(
            "badgeline_event_loop_lag_seconds",
            f"How late a timer due every {self.lag.interval_s:g} s ran on the event loop",
        )
        lag.add_metric([], self.lag.histogram.buckets(), self.lag.histogram.total_s)
        yield lag
