"""Priority, then arrival (invariant 3): the lease endpoint hands jobs out by
priority number, FIFO within a priority by acceptance sequence, however many
wall-clock seconds the submissions span."""

from __future__ import annotations

import asyncio
import random

from tests.coordinator import flows
from tests.coordinator.conftest import MakeClient

JOBS = 1000
SPREAD_S = 2.4  # more than 2 s: the seed's `priority + time.time() % 1` wraps every second
PRIORITIES = (0, 1, 5, 50, 100, 100, 100, 500, 999, 1000)


async def test_a_thousand_jobs_come_out_in_priority_then_arrival_order(
    make_client: MakeClient,
) -> None:
    client = await make_client(high_water_mark=JOBS + 10, lease_max_jobs=50)
    rng = random.Random(20240601)
    loop = asyncio.get_running_loop()
    # GIVEN 1,000 jobs of mixed priorities, submitted one after another over > 2 s
    began = loop.time()
    submitted: list[tuple[int, int, str]] = []  # (priority, arrival, job_id)
    for arrival in range(JOBS):
        priority = rng.choice(PRIORITIES)
        created = await flows.submit(client, priority=priority)
        submitted.append((priority, arrival, created["job_id"]))
        # pace the submissions evenly across the spread (test setup, not an assertion)
        await asyncio.sleep(max(0.0, began + SPREAD_S * (arrival + 1) / JOBS - loop.time()))
    assert loop.time() - began > 2.0, "setup: the submissions must span more than 2 s"
    # WHEN the printer's agent leases them all
    leased: list[str] = []
    while batch := await flows.lease(client, max_jobs=50):
        leased += [job["job_id"] for job in batch]
    # THEN they came out by priority, FIFO within a priority
    assert leased == [job_id for _, _, job_id in sorted(submitted)]
