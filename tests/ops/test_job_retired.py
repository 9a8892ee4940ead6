"""`badgeline job ID` finds a job that has left Redis after its retention: the
coordinator reads it from the audit export, so the operator types the same
command from any laptop, and reconciliation stays clean."""

from __future__ import annotations

from redis.asyncio import Redis

from badgeline.coordinator.store.keys import VenueKeys
from tests.helpers import wait_for
from tests.ops.conftest import MakeVenue


async def test_badgeline_job_shows_a_job_the_sweep_has_exported(
    make_venue: MakeVenue, redis: Redis
) -> None:
    # GIVEN a venue whose closed jobs leave Redis a second after they close, swept by
    # its coordinator's own upkeep loop, and a badge printed there
    venue = await make_venue(job_retention_s=1, retention_sweep_interval_s=0.1)
    job_id = await venue.printed_job()
    keys = VenueKeys((await venue.ops("GET", "/healthz"))["venue"])
    before = await venue.cli_ok("job", job_id)

    async def gone() -> bool:
        return not await redis.exists(keys.job(job_id))

    # WHEN the job has left Redis
    await wait_for(gone, 20, interval_s=0.1)
    # THEN `badgeline job` still shows it: the same summary and history, and a last
    # line saying it was read from the audit export
    after = await venue.cli_ok("job", job_id)
    assert after.out.startswith(before.out.rstrip("\n"))
    assert after.line(job_id).startswith(job_id)
    last = after.out.rstrip("\n").splitlines()[-1]
    assert "printed" in last and "coordinator:retention" in last and "audit export" in last
    # AND reconciliation is clean, counting the job among those that left
    clean = await venue.cli("reconcile", "--check", "--deadline", "0")
    assert clean.code == 0 and "CLEAN" in clean.out, clean.out
    assert "left Redis after their retention 1" in clean.out
