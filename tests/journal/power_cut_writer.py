"""Power-cut writer: drives a journal like a busy agent until it is SIGKILLed.

Usage: python power_cut_writer.py JOURNAL RUN SEED

Prints `OPENING` before it opens the journal, then `<job_id> <lease_id> <state>`
(flushed) after every committed transition:
each line is a promise the journal must keep after the kill. Starts with the
agent's own start-up (open, recover, resend owed acks) so that kills also land
in recovery after an earlier kill.
"""

from __future__ import annotations

import asyncio
import random
import sys
from pathlib import Path

from badgeline.agent.journal import Journal, JournalSettings, LocalJobState


def report(job_id: str, lease_id: str, state: str) -> None:
    print(f"{job_id} {lease_id} {state}", flush=True)


async def start_up(journal: Journal) -> None:
    plan = await journal.recover()
    for entry in plan.marked_uncertain:
        report(entry.job_id, entry.lease_id, "uncertain")
    for ack in plan.acks_to_send:
        await journal.mark_acked(ack.job_id, ack.lease_id)
        report(ack.job_id, ack.lease_id, "acked")
    for entry in plan.grants_to_retry:
        await journal.record_dropped(entry.job_id, entry.lease_id, "lease expired while down")
        report(entry.job_id, entry.lease_id, "dropped")


async def one_lease(journal: Journal, rng: random.Random, job_id: str, lease_id: str) -> None:
    payload = {"job_id": job_id, "padding": "x" * rng.randint(50, 3000)}
    entry = await journal.record_lease(job_id, lease_id, payload)
    report(job_id, lease_id, str(entry.state))
    if entry.state is not LocalJobState.LEASED:
        return
    if rng.random() < 0.05:
        await journal.record_dropped(job_id, lease_id, "lease_revoked")
        report(job_id, lease_id, "dropped")
        return
    await journal.record_grant(job_id, lease_id, rng.randint(1, 9))
    report(job_id, lease_id, "granted")
    if rng.random() < 0.1:
        await journal.record_failed(job_id, lease_id, "paper out")
        report(job_id, lease_id, "failed")
    else:
        await journal.record_printed(job_id, lease_id)
        report(job_id, lease_id, "printed")
    if rng.random() < 0.8:
        await journal.mark_acked(job_id, lease_id)
        report(job_id, lease_id, "acked")


async def main(path: Path, run: int, seed: int) -> None:
    rng = random.Random(seed)
    # A tiny autocheckpoint makes kills land in checkpoints too, not just commits.
    settings = JournalSettings(path=path, wal_autocheckpoint_pages=8)
    print("OPENING", flush=True)  # not a promise: lets the test aim kills at start-up
    journal = await Journal.open(settings)
    if journal.moved_aside is not None:
        print(f"MOVED-ASIDE {journal.moved_aside}", flush=True)
    await start_up(journal)
    jobs: list[str] = []
    lease = 0
    while True:
        lease += 1
        # Now and then the coordinator leases an earlier job again.
        again = jobs and rng.random() < 0.1
        job_id = rng.choice(jobs) if again else f"r{run}-job{lease}"
        jobs.append(job_id)
        await one_lease(journal, rng, job_id, f"r{run}-lease{lease}")


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])))
