"""Returns expired, never-granted leases to their queues.

Safe to run in every coordinator replica at once: each pass is one atomic
script, so two scanners can never both return the same job.
"""

from __future__ import annotations

import asyncio
import logging

from badgeline.coordinator.events import log_event
from badgeline.coordinator.store import JobStore

ACTOR = "coordinator:lease-scanner"


async def scan_leases_forever(store: JobStore, interval_s: float) -> None:
    failing = False
    while True:
        try:
            returned = await store.expire_leases(ACTOR)
            if returned:
                log_event("leases_expired", returned_to_queue=returned)
            if failing:
                log_event("lease_scanner_recovered")
            failing = False
        except asyncio.CancelledError:
            raise
        except Exception as error:  # an upkeep loop logs a failure and carries on
            if not failing:  # once per state change, not once per attempt
                log_event("lease_scanner_failing", logging.ERROR, error=str(error))
            failing = True
        await asyncio.sleep(interval_s)
