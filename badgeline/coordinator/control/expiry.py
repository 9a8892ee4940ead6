"""Job deadlines: waiting jobs submitted with `expire_after_s` expire once it passes.

Every replica runs the sweep (an `UpkeepLoop`); each call is one atomic script
(expire_jobs-1.lua), so two replicas never expire one job twice. The sweep is
only what makes the state show: the lease and start scripts check the deadline
themselves, so a job between two sweeps is still never handed out or started.
"""

from __future__ import annotations

from badgeline.coordinator.store import Store
from badgeline.coordinator.store.waiting import EXPIRE_BATCH
from badgeline.log import job_event

ACTOR = "coordinator:expiry"
# Calls one sweep makes at most (the next sweep an interval later takes the rest).
MAX_CALLS_PER_SWEEP = 50


async def expire_due_once(store: Store) -> int:
    expired_count = 0
    for _ in range(MAX_CALLS_PER_SWEEP):
        expired = await store.expiry.expire_due(ACTOR)
        for job in expired:  # one line per state change (invariant 8)
            job_event(
                "job_expired", job_id=job.job_id, printer_id=job.printer_id,
                idempotency_key=job.trace.idempotency_key,
                correlation_id=job.trace.correlation_id, was=job.was,
            )  # fmt: skip
        expired_count += len(expired)
        if len(expired) < EXPIRE_BATCH:
            break
    return expired_count
