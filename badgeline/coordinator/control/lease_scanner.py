"""Returns expired, never-granted leases to their queues; keeps the leased sets exact.

Safe to run in every coordinator replica at once: each pass is one atomic
script, so two scanners can never both return the same job. The loop around
it is an `UpkeepLoop` (see upkeep.py).
"""

from __future__ import annotations

import logging

from badgeline.coordinator.store import Store
from badgeline.log import job_event, log_event

ACTOR = "coordinator:lease-scanner"
# The leased sets need repair only after an older coordinator touched the jobs.
LEASED_REPAIR_INTERVAL_S = 30.0


async def expire_leases_once(store: Store) -> int:
    expired = await store.leases.expire(ACTOR)
    for lease in expired:  # one line per state change (invariant 8)
        job_event(
            "lease_expired", job_id=lease.job_id, printer_id=lease.printer_id,
            idempotency_key=lease.trace.idempotency_key,
            correlation_id=lease.trace.correlation_id, lease_id=lease.lease_id,
        )  # fmt: skip
    return len(expired)


async def repair_leased_sets_once(store: Store) -> int:
    dropped = await store.leases.repair_leased_sets()
    if dropped:
        log_event("leased_sets_repaired", logging.WARNING, dropped=dropped,
                  why="jobs left leased by a coordinator that keeps no such sets")  # fmt: skip
    return dropped
