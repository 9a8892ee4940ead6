"""Reads a coordinator's stall metrics (badgeline/coordinator/control/stalls.py) from its
`GET /metrics`, so a bench can say what held up a round: GC pauses or loop lag."""

from __future__ import annotations

from dataclasses import dataclass

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

GC = "badgeline_gc_pause_seconds"
LAG = "badgeline_event_loop_lag_seconds"


@dataclass(frozen=True)
class Stalls:
    """Cumulative counts at one scrape; subtract two to get a round's."""

    gc_counts: dict[str, float]  # generation -> collections
    gc_seconds: dict[str, float]  # generation -> total pause
    lag_buckets: dict[float, float]  # upper bound (s) -> cumulative ticks

    def since(self, before: Stalls) -> str:
        collections = []
        for generation in ("2", "1", "0"):
            count = self.gc_counts.get(generation, 0) - before.gc_counts.get(generation, 0)
            pause = self.gc_seconds.get(generation, 0) - before.gc_seconds.get(generation, 0)
            collections.append(f"gen{generation} {count:.0f} ({1000 * pause:.0f} ms)")
        ticks = {b: n - before.lag_buckets.get(b, 0) for b, n in self.lag_buckets.items()}
        total = ticks.get(float("inf"), 0)
        late = {bound: total - ticks.get(bound, 0) for bound in (0.01, 0.025, 0.1)}
        return (
            f"gc: {', '.join(collections)}; loop lag over 10/25/100 ms: "
            f"{late[0.01]:.0f}/{late[0.025]:.0f}/{late[0.1]:.0f} of {total:.0f} ticks"
        )


async def read_stalls(session: aiohttp.ClientSession, base_url: str, token: str) -> Stalls:
    headers = {"Authorization": f"Bearer {token}"}
    async with session.get(base_url + "/metrics", headers=headers) as response:
        response.raise_for_status()
        text = await response.text()
    gc_counts: dict[str, float] = {}
    gc_seconds: dict[str, float] = {}
    lag: dict[float, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == GC + "_count":
                gc_counts[sample.labels["generation"]] = sample.value
            elif sample.name == GC + "_sum":
                gc_seconds[sample.labels["generation"]] = sample.value
            elif sample.name == LAG + "_bucket":
                lag[float(sample.labels["le"])] = sample.value
    return Stalls(gc_counts, gc_seconds, lag)
