"""The venue's data format, and the upgrade a new coordinator runs before it serves.

    format 1  each job's payload in separate hash fields (attendee_id,
              badge_pdf_ref, printer_target, priority, idempotency_key)
    format 2  the payload as one JSON field, `payload` (protocol/job.PrintJob);
              `idempotency_key` stays beside it, for the scripts that close claims
    format 3  every closed job is in the `closed` index, by when it closed, for
              the retention sweep (control/retention.py); a release that keeps no
              index would close jobs that never leave Redis

`upgrade` brings every job a previous release wrote (queued, leased, printing,
finished, dead-lettered: all are hashes of the same shape) to the current format,
one atomic script per job (upgrade_job-2.lua), then records the format. Every step
is idempotent: replicas starting together each run it safely, and a coordinator
killed halfway finishes the job at its next start. Nothing else changes: queues,
leases, fences and claims keep their ids and scores, so a venue upgraded
mid-event loses nothing and prints nothing twice.

The upgrade runs once at start-up, before any request: stop every replica of the
previous release before the first new one starts (docs/field-install.md).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from badgeline.coordinator.config import ConfigError
from badgeline.coordinator.store.records import Records, text
from badgeline.log import log_event

DATA_FORMAT = 3
SCAN_BATCH = 1000


class DataFormatTooNew(ConfigError):
    """Redis holds a venue written by a newer release: this one must not touch it."""


@dataclass(frozen=True)
class UpgradeReport:
    found: int  # the format before (the current one for a new venue)
    now: int
    jobs_upgraded: int


class DataFormat(Records):
    async def current(self) -> int | None:
        """The venue's format; None for a venue nothing has written yet."""
        value = await self._redis.get(self.keys.data_format)
        if value is not None:
            return int(text(value))
        # No mark: a format-1 release wrote it (every accept counts `seq`, every
        # heartbeat joins `printers`), or it is new.
        return 1 if await self._redis.exists(self.keys.sequence, self.keys.printers) else None

    async def upgrade(self) -> UpgradeReport:
        found = await self.current()
        if found is not None and found > DATA_FORMAT:
            raise DataFormatTooNew(
                f"venue {self.settings.venue!r} in Redis is in data format {found}, written by"
                f" a newer badgeline; this release reads format {DATA_FORMAT} at most: run the"
                " newer release"
            )
        upgraded = 0
        if found is not None and found < DATA_FORMAT:
            upgraded = await self._upgrade_jobs()
            log_event("data_format_upgraded", logging.WARNING, venue=self.settings.venue,
                      found=found, now=DATA_FORMAT, jobs_upgraded=upgraded)  # fmt: skip
        if found != DATA_FORMAT:  # marked last: a start killed halfway upgrades again
            await self._redis.set(self.keys.data_format, DATA_FORMAT)
        return UpgradeReport(found or DATA_FORMAT, DATA_FORMAT, upgraded)

    async def _upgrade_jobs(self) -> int:
        upgraded = 0
        job_prefix = self.keys.job("")
        async for raw in self._redis.scan_iter(match=self.keys.job_pattern, count=SCAN_BATCH):
            key = text(raw)
            if ":" in key.removeprefix(job_prefix):
                continue  # a job's history or prints, not the job
            upgraded += int(await self._run("upgrade_job", [key, self.keys.closed], []))
        return upgraded
