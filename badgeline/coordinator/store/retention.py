"""Closed jobs leaving Redis: claimed for the audit export, then removed.

The sweep (control/retention.py) claims a batch of jobs closed longer than
`job_retention_s` (retire_claim-1.lua), writes them to disk and then removes
them (retire-4.lua). A claim is a random token on the job's hash that holds
for `hold_ms`: replicas sweeping at once never claim the same job, and a job
whose claimant died is claimed again once its claim has run out, marked as a
later attempt so that the new claimant looks for it in the export first.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from badgeline.coordinator.store.jobs import job_view
from badgeline.coordinator.store.records import JobOwner, Records, text
from badgeline.protocol.models import JobView

# Fields of the job hash that belong to the claim, not to the job.
CLAIM_FIELDS = frozenset({"retire_claim", "retire_until_ms", "retire_first_ms", "retire_attempts"})


@dataclass(frozen=True)
class ClaimedJob:
    job_id: str
    fields: dict[str, str]  # the job hash as it is, without the claim's fields
    history: list[dict[str, Any]]
    prints: list[str]  # the leases whose agents reported a print
    grants: list[str]  # the leases ever granted a start
    attempt: int  # 1 for a first claim; more when an earlier claim ran out
    first_claimed_ms: int  # Redis clock

    @property
    def view(self) -> JobView:
        return job_view(self.fields, [json.dumps(h) for h in self.history], len(self.prints))

    @property
    def owner(self) -> JobOwner:
        return JobOwner.from_hash(self.fields)


@dataclass(frozen=True)
class Claim:
    token: str
    now_ms: int  # Redis clock, when the claim was made
    jobs: list[ClaimedJob]


@dataclass(frozen=True)
class RetireOutcome:
    retired: int
    kept: int  # changed since the claim, taken by another claimant, or a redrive needs it


def _claimed(row: list[Any]) -> ClaimedJob:
    job_id, flat, history, prints, grants, attempt, first_ms = row
    pairs = iter(text(value) for value in flat)
    fields = {name: value for name, value in zip(pairs, pairs, strict=True)}
    return ClaimedJob(
        job_id=text(job_id),
        fields={name: value for name, value in fields.items() if name not in CLAIM_FIELDS},
        history=[json.loads(text(entry)) for entry in history],
        prints=sorted(text(lease) for lease in prints),
        grants=sorted(text(lease) for lease in grants),
        attempt=int(attempt),
        first_claimed_ms=int(first_ms),
    )


class RetentionRecords(Records):
    async def claim(self, token: str, limit: int, hold_ms: int) -> Claim:
        """Up to `limit` jobs closed longer than job_retention_s, held for `token`."""
        k = self.keys
        retention_ms = self.settings.job_retention_s * 1000
        reply = await self._run(
            "retire_claim", [k.closed], [k.prefix, retention_ms, limit, token, hold_ms]
        )
        return Claim(token, int(reply[0]), [_claimed(row) for row in reply[1:]])

    async def retire(self, token: str, job_ids: list[str]) -> RetireOutcome:
        """Remove the jobs `token` claimed (once they are written to the export)."""
        if not job_ids:
            return RetireOutcome(0, 0)
        k = self.keys
        reply = await self._run(
            "retire",
            [k.closed, k.stats_totals, k.printed_twice, k.possible_duplicates],
            [k.prefix, token, *job_ids],
        )
        return RetireOutcome(int(reply[0]), int(reply[1]))

    async def closed_count(self) -> int:
        """Closed jobs still in Redis (waiting out their retention, or being retired)."""
        return int(await self._redis.zcard(self.keys.closed))
