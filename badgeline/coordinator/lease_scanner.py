"""Returns expired, never-granted leases to their queues.

Safe to run in every coordinator replica at once: each pass is one atomic
script, so two scanners can never both return the same job. The loop around
it is an `UpkeepLoop` (see upkeep.py).
"""

from __future__ import annotations

from badgeline.coordinator.events import log_event
from badgeline.coordinator.store import JobStore

ACTOR = "coordinator:lease-scanner"


async def expire_leases_once(store: JobStore) -> int:
    returned = await store.expire_leases(ACTOR)
    if returned:
        log_event("leases_expired", returned_to_queue=returned)
    return returned
