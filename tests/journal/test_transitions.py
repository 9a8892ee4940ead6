"""Every local transition, every illegal one, repeats, and re-leased jobs."""

from __future__ import annotations

import asyncio

import pytest

from badgeline.agent.journal import (
    IllegalTransitionError,
    Journal,
    JournalError,
    LocalJobState,
    UnknownLeaseError,
)

from .helpers import FENCE, PAYLOAD, SETUPS, ManualClock, apply_step, job_in_state

ILLEGAL = "illegal"
SAME = "same"  # an idempotent repeat: nothing changes, nothing raised

# Written out by hand rather than derived from the code's table, so a change to
# the state machine has to be made twice, on purpose.
EXPECTED: dict[str, dict[str, str]] = {
    "leased": {
        "grant": "granted",
        "printed": ILLEGAL,
        "failed": "failed",
        "uncertain": ILLEGAL,
        "dropped": "dropped",
        "acked": ILLEGAL,
    },
    "granted": {
        "grant": SAME,
        "printed": "printed",
        "failed": "failed",
        "uncertain": "uncertain",
        "dropped": ILLEGAL,
        "acked": ILLEGAL,
    },
    "printed": {
        "grant": ILLEGAL,
        "printed": SAME,
        "failed": ILLEGAL,
        "uncertain": ILLEGAL,
        "dropped": ILLEGAL,
        "acked": "acked",
    },
    "failed": {
        "grant": ILLEGAL,
        "printed": ILLEGAL,
        "failed": SAME,
        "uncertain": ILLEGAL,
        "dropped": ILLEGAL,
        "acked": "acked",
    },
    "uncertain": {
        "grant": ILLEGAL,
        "printed": ILLEGAL,
        "failed": ILLEGAL,
        "uncertain": SAME,
        "dropped": ILLEGAL,
        "acked": "acked",
    },
    "dropped": {
        "grant": ILLEGAL,
        "printed": ILLEGAL,
        "failed": ILLEGAL,
        "uncertain": ILLEGAL,
        "dropped": SAME,
        "acked": ILLEGAL,
    },
    "acked-printed": {
        "grant": ILLEGAL,
        "printed": SAME,
        "failed": ILLEGAL,
        "uncertain": ILLEGAL,
        "dropped": ILLEGAL,
        "acked": SAME,
    },
    "acked-failed": {
        "grant": ILLEGAL,
        "printed": ILLEGAL,
        "failed": SAME,
        "uncertain": ILLEGAL,
        "dropped": ILLEGAL,
        "acked": SAME,
    },
    "acked-uncertain": {
        "grant": ILLEGAL,
        "printed": ILLEGAL,
        "failed": ILLEGAL,
        "uncertain": SAME,
        "dropped": ILLEGAL,
        "acked": SAME,
    },
}
CASES = [
    (setup, step, expected) for setup, row in EXPECTED.items() for step, expected in row.items()
]


def test_the_expected_table_covers_every_setup() -> None:
    assert set(EXPECTED) == set(SETUPS)


@pytest.mark.parametrize(("setup", "step", "expected"), CASES)
async def test_transition(journal: Journal, setup: str, step: str, expected: str) -> None:
    # GIVEN a job in the set-up state
    before = await job_in_state(journal, setup)
    acks_before = await journal.pending_acks()

    # WHEN the step is journaled
    if expected == ILLEGAL:
        with pytest.raises(IllegalTransitionError):
            await apply_step(journal, "job-1", "lease-1", step)
        # THEN an illegal step changes nothing
        assert await journal.get("job-1", "lease-1") == before
        assert await journal.pending_acks() == acks_before
        return
    after = await apply_step(journal, "job-1", "lease-1", step)

    # THEN a repeat changes nothing; a legal step moves to the expected state
    if expected == SAME:
        assert after == before
        assert await journal.pending_acks() == acks_before
        return
    assert after.state == LocalJobState(expected)
    assert await journal.get("job-1", "lease-1") == after
    queued = [(ack.job_id, ack.result) for ack in await journal.pending_acks()]
    if after.state in (LocalJobState.PRINTED, LocalJobState.FAILED, LocalJobState.UNCERTAIN):
        assert queued == [("job-1", str(after.state))]
    else:
        assert queued == []


async def test_the_happy_path_stamps_each_step_with_the_clock(
    journal: Journal, clock: ManualClock
) -> None:
    # GIVEN a job leased at t0
    t0 = clock.now
    leased = await journal.record_lease("job-1", "lease-1", PAYLOAD)

    # WHEN it is granted, printed and acked a second apart each
    clock.advance(1)
    granted = await journal.record_grant("job-1", "lease-1", FENCE)
    clock.advance(1)
    printed = await journal.record_printed("job-1", "lease-1")
    clock.advance(1)
    acked = await journal.mark_acked("job-1", "lease-1")

    # THEN each row carries its own timestamp, the fence, the payload and the outcome
    assert (leased.state, leased.leased_at, leased.payload) == ("leased", t0, PAYLOAD)
    assert (granted.fence, granted.granted_at) == (FENCE, t0 + 1)
    assert (printed.printed_at, printed.outcome) == (t0 + 2, "printed")
    assert (acked.state, acked.acked_at, acked.outcome) == ("acked", t0 + 3, "printed")
    assert acked.payload == PAYLOAD


async def test_a_second_grant_with_another_fence_is_refused(journal: Journal) -> None:
    # GIVEN a job granted with fence 7
    await job_in_state(journal, "granted")

    # WHEN a grant with fence 8 is journaled for the same lease
    with pytest.raises(IllegalTransitionError, match="fence"):
        await journal.record_grant("job-1", "lease-1", FENCE + 1)

    # THEN the journal keeps the fence the print runs under
    entry = await journal.get("job-1", "lease-1")
    assert entry is not None and entry.fence == FENCE


async def test_failure_before_the_grant_queues_an_ack_without_a_fence(journal: Journal) -> None:
    # GIVEN a leased job whose PDF cannot be rendered
    await journal.record_lease("job-1", "lease-1", PAYLOAD)

    # WHEN it is journaled as failed before any grant
    await journal.record_failed("job-1", "lease-1", "PDF has no embedded fonts")

    # THEN a failed ack without a fence waits in the outbox
    [ack] = await journal.pending_acks()
    assert (ack.result, ack.fence, ack.error) == ("failed", None, "PDF has no embedded fonts")


async def test_a_transition_for_an_unknown_lease_raises(journal: Journal) -> None:
    # GIVEN a job journaled under lease-1
    await journal.record_lease("job-1", "lease-1", PAYLOAD)

    # WHEN / THEN a grant for a lease never journaled is refused with a typed error
    with pytest.raises(UnknownLeaseError):
        await journal.record_grant("job-1", "lease-9", FENCE)
    with pytest.raises(UnknownLeaseError):
        await journal.mark_acked("job-2", "lease-1")


async def test_the_same_lease_twice_returns_the_first_row(journal: Journal) -> None:
    # GIVEN a granted job
    first = await job_in_state(journal, "granted")

    # WHEN the same lease is delivered again, even with another payload
    again = await journal.record_lease("job-1", "lease-1", {"other": True})

    # THEN the journal returns the existing row untouched
    assert again == first
    assert len(await journal.history("job-1")) == 1


async def test_a_new_lease_supersedes_an_ungranted_one(journal: Journal) -> None:
    # GIVEN a job leased under lease-1 but never granted (the lease expired)
    await job_in_state(journal, "leased")

    # WHEN the coordinator leases it again under lease-2
    new = await journal.record_lease("job-1", "lease-2", PAYLOAD)

    # THEN lease-2 is live and lease-1 is dropped, both kept as history
    old = await journal.get("job-1", "lease-1")
    assert new.state is LocalJobState.LEASED
    assert old is not None and old.state is LocalJobState.DROPPED
    assert old.error == "superseded by lease lease-2"
    assert [entry.lease_id for entry in await journal.history("job-1")] == ["lease-1", "lease-2"]
    assert (await journal.get("job-1")) == new


@pytest.mark.parametrize("setup", ["acked-failed", "acked-uncertain", "dropped", "failed"])
async def test_a_new_lease_after_a_harmless_lease_keeps_history(
    journal: Journal, setup: str
) -> None:
    # GIVEN a job whose lease-1 ended without a known print (or whose
    # uncertain print the coordinator has already heard about)
    old_before = await job_in_state(journal, setup)

    # WHEN the coordinator leases it again
    new = await journal.record_lease("job-1", "lease-2", PAYLOAD)

    # THEN the new lease may print, and the old row is kept unchanged
    assert new.state is LocalJobState.LEASED
    assert await journal.get("job-1", "lease-1") == old_before
    assert len(await journal.history("job-1")) == 2


@pytest.mark.parametrize("setup", ["granted", "printed", "acked-printed", "uncertain"])
async def test_a_new_lease_of_a_job_printed_here_is_dropped(journal: Journal, setup: str) -> None:
    # GIVEN a job that printed here, is printing, or may have printed (not yet reported)
    old_before = await job_in_state(journal, setup)

    # WHEN the coordinator leases it again under lease-2
    new = await journal.record_lease("job-1", "lease-2", PAYLOAD)

    # THEN lease-2 is journaled as dropped, so the agent will not print it,
    # and lease-1 (with any ack it still owes) is untouched
    assert new.state is LocalJobState.DROPPED
    assert new.error is not None and "lease-1" in new.error
    assert await journal.get("job-1", "lease-1") == old_before
    with pytest.raises(IllegalTransitionError):
        await journal.record_grant("job-1", "lease-2", FENCE + 1)


async def test_concurrent_jobs_do_not_interleave_transactions(journal: Journal) -> None:
    # GIVEN forty jobs handled by concurrent coroutines on one journal
    async def run(job_id: str) -> None:
        await journal.record_lease(job_id, "lease-1", PAYLOAD)
        await journal.record_grant(job_id, "lease-1", 1)
        await journal.record_printed(job_id, "lease-1")
        await journal.mark_acked(job_id, "lease-1")

    # WHEN they all run at once
    await asyncio.gather(*(run(f"job-{n}") for n in range(40)))

    # THEN every job is acked and the outbox is empty
    assert (await journal.counts())["acked"] == 40
    assert await journal.pending_acks() == []


async def test_a_closed_journal_refuses_calls(journal: Journal) -> None:
    # GIVEN a closed journal
    await journal.close()

    # WHEN / THEN any call raises a journal error instead of hanging
    with pytest.raises(JournalError, match="closed"):
        await journal.record_lease("job-1", "lease-1", PAYLOAD)
