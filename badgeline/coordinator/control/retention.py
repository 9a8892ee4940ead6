"""The retention sweep: closed jobs leave Redis `job_retention_s` after they closed.

Each batch is claim → write → remove. The claim (store.retention.claim, one
script) hands each job to one sweeper for CLAIM_HOLD_S, so every replica can run
the sweep at once and a job is exported by one of them. The batch is written to
the audit export and fsynced (audit_export.py) before the jobs are removed
(store.retention.retire), which counts them into the reports first: the
statistics and reconciliation read counters, not the jobs, and stay as they were.
A sweeper that dies between its write and the removal leaves claims that run out;
the next claimant finds those jobs in the export and removes them without a
second record. Idempotency claims keep their own dedupe window.
"""

from __future__ import annotations

import asyncio
import secrets

from badgeline.coordinator.control.audit_export import (
    AuditExport,
    WriteResult,
    record_line,
    version,
)
from badgeline.coordinator.store import Store
from badgeline.coordinator.store.retention import Claim, RetireOutcome
from badgeline.log import log_event

# Jobs per claim: one script reply of a few hundred kilobytes, and a write of as much.
BATCH = 200
# A step stops after this many batches (the next one comes an interval later), so
# that a backlog (a first start after an upgrade) never holds the loop for long.
MAX_BATCHES_PER_STEP = 50
# Long past a batch's write and fsync (milliseconds): a claim runs out only when
# its sweeper has died or hung.
CLAIM_HOLD_S = 120.0


class RetentionSweeper:
    def __init__(self, store: Store, export: AuditExport, hold_s: float = CLAIM_HOLD_S) -> None:
        self.store = store
        self.export = export
        self.hold_ms = int(hold_s * 1000)

    async def sweep_once(self) -> int:
        """Retire every job that is due (up to MAX_BATCHES_PER_STEP batches); returns
        how many left Redis."""
        retired = 0
        for _ in range(MAX_BATCHES_PER_STEP):
            claim = await self.claim()
            if not claim.jobs:
                break
            written = await self.write(claim)
            outcome = await self.remove(claim)
            retired += outcome.retired
            log_event("jobs_retired", retired=outcome.retired, kept=outcome.kept,
                      written=written.written, already_exported=written.already,
                      file=written.path.name if written.path else None)  # fmt: skip
            if len(claim.jobs) < BATCH:
                break
        return retired

    async def claim(self, limit: int = BATCH) -> Claim:
        return await self.store.retention.claim(secrets.token_hex(8), limit, self.hold_ms)

    async def write(self, claim: Claim) -> WriteResult:
        """The claimed jobs on disk, fsynced; a job claimed before (its claimant
        died) is written only if the export does not hold it yet."""
        venue = self.store.settings.venue
        lines = [(job.job_id, record_line(job, venue, claim.now_ms)) for job in claim.jobs]
        look_first = {job.job_id: (job.first_claimed_ms / 1000, version(job))
                      for job in claim.jobs if job.attempt > 1}  # fmt: skip
        return await asyncio.to_thread(self.export.write, lines, look_first)

    async def remove(self, claim: Claim) -> RetireOutcome:
        return await self.store.retention.retire(claim.token, [job.job_id for job in claim.jobs])
