"""Priority, then arrival (invariant 3): the lease endpoint hands jobs out by
priority number, FIFO within a priority by acceptance sequence, however many
wall-clock seconds the submissions span."""

from __future__ import annotations

import asyncio
import random
from typing import Any

from tests.coordinator import flows
from tests.coordinator.conftest import MakeClient

JOBS = 1000
BATCH = 8  # submitted concurrently, with distinct priorities: their order is never in question
SPREAD_S = 2.4  # more than 2 s: a `priority + time.time() % 1` score would wrap every second
PRIORITIES = (0, 1, 2, 5, 10, 50, 99, 100, 101, 250, 500, 998, 999, 1000)


async def test_a_thousand_jobs_come_out_in_priority_then_arrival_order(
    make_client: MakeClient,
) -> None:
    client = await make_client(high_water_mark=JOBS + 10, lease_max_jobs=50)
    rng = random.Random(20240601)
    loop = asyncio.get_running_loop()
    # GIVEN 1,000 jobs of mixed priorities, submitted batch after batch over > 2 s; within
    # a batch no two jobs share a priority, so FIFO within a priority is batch order
    began = loop.time()
    submitted: list[tuple[int, int, str]] = []  # (priority, batch, job_id)
    for batch in range(JOBS // BATCH):
        priorities = rng.sample(PRIORITIES, BATCH)
        created: list[Any] = await asyncio.gather(
            *[flows.submit(client, priority=priority) for priority in priorities]
        )
        submitted += [(p, batch, job["job_id"]) for p, job in zip(priorities, created, strict=True)]
        # pace the batches evenly across the spread (test setup, not an assertion)
        due = began + SPREAD_S * (batch + 1) * BATCH / JOBS
        await asyncio.sleep(max(0.0, due - loop.time()))
    assert len(submitted) == JOBS
    assert loop.time() - began > 2.0, "setup: the submissions must span more than 2 s"
    # WHEN the printer's agent leases them all
    leased: list[str] = []
    while batch_jobs := await flows.lease(client, max_jobs=50):
        leased += [job["job_id"] for job in batch_jobs]
    # THEN they came out by priority, FIFO within a priority
    assert leased == [job_id for _, _, job_id in sorted(submitted)]
