"""Start-up recovery, heartbeat counts and pruning."""

from __future__ import annotations

from badgeline.agent.journal import Journal, LocalJobState

from .conftest import OpenJournal
from .helpers import FENCE, PAYLOAD, ManualClock, job_in_state

DAY = 24 * 3600.0


async def journal_left_by_a_power_cut(journal: Journal) -> None:
    """One job in each state, as a run cut off mid-way would leave them."""
    await job_in_state(journal, "printed", "job-printed", "lease-p")
    await job_in_state(journal, "failed", "job-failed", "lease-f")
    await job_in_state(journal, "granted", "job-granted", "lease-g")
    await job_in_state(journal, "leased", "job-leased", "lease-l")
    await job_in_state(journal, "acked-printed", "job-acked", "lease-a")
    await job_in_state(journal, "dropped", "job-dropped", "lease-d")


async def test_recover_classifies_what_the_last_run_left(open_journal: OpenJournal) -> None:
    # GIVEN a journal left with a job in every state, and the agent restarted
    journal = await open_journal()
    await journal_left_by_a_power_cut(journal)
    await journal.close()
    restarted = await open_journal()

    # WHEN the agent recovers
    plan = await restarted.recover()

    # THEN the grant without a result is now uncertain, never to be printed again here
    [uncertain] = plan.marked_uncertain
    assert (uncertain.job_id, uncertain.state, uncertain.fence) == (
        "job-granted",
        LocalJobState.UNCERTAIN,
        FENCE,
    )
    assert uncertain.error is not None and "may or may not have printed" in uncertain.error
    # AND every owed result is to be sent again, oldest first, the uncertain one last
    assert [(ack.job_id, ack.result) for ack in plan.acks_to_send] == [
        ("job-printed", "printed"),
        ("job-failed", "failed"),
        ("job-granted", "uncertain"),
    ]
    # AND the lease that never got its grant is to be tried again
    assert [entry.job_id for entry in plan.grants_to_retry] == ["job-leased"]


async def test_recover_twice_marks_nothing_more(open_journal: OpenJournal) -> None:
    # GIVEN a recovered journal
    journal = await open_journal()
    await job_in_state(journal, "granted")
    await journal.close()
    restarted = await open_journal()
    first = await restarted.recover()

    # WHEN recover runs again
    second = await restarted.recover()

    # THEN nothing new is marked and the same ack is still owed
    assert [entry.job_id for entry in first.marked_uncertain] == ["job-1"]
    assert second.marked_uncertain == []
    assert second.acks_to_send == first.acks_to_send


async def test_recover_leaves_this_runs_own_grant_alone(journal: Journal) -> None:
    # GIVEN a print granted by this very process and still running
    await job_in_state(journal, "granted")

    # WHEN recover is called (late, by mistake)
    plan = await journal.recover()

    # THEN the running print is not disowned as uncertain
    assert plan.marked_uncertain == []
    entry = await journal.get("job-1", "lease-1")
    assert entry is not None and entry.state is LocalJobState.GRANTED


async def test_recover_on_an_empty_journal_has_nothing_to_do(journal: Journal) -> None:
    plan = await journal.recover()
    assert (plan.acks_to_send, plan.marked_uncertain, plan.grants_to_retry) == ([], [], [])


async def test_counts_report_every_state(journal: Journal) -> None:
    # GIVEN a journal with one job in each state but `uncertain`, and two acked
    await journal_left_by_a_power_cut(journal)
    await job_in_state(journal, "acked-failed", "job-acked-2", "lease-a2")

    # WHEN the heartbeat asks for counts
    counts = await journal.counts()

    # THEN every state is present, zeros included
    assert counts == {
        "leased": 1,
        "granted": 1,
        "printed": 1,
        "failed": 1,
        "uncertain": 0,
        "acked": 2,
        "dropped": 1,
    }


async def test_prune_deletes_only_old_finished_rows(
    open_journal: OpenJournal, clock: ManualClock
) -> None:
    # GIVEN a week-old journal with a job in every state
    journal = await open_journal(retention_s=2 * DAY)
    await journal_left_by_a_power_cut(journal)
    # AND a job acked just now
    clock.advance(7 * DAY)
    await job_in_state(journal, "acked-printed", "job-recent", "lease-r")

    # WHEN the journal is pruned
    deleted = await journal.prune()

    # THEN the old acked and dropped rows are gone; everything still owed, and recent, stays
    assert deleted == 2
    assert await journal.get("job-acked") is None
    assert await journal.get("job-dropped") is None
    for job_id in ("job-printed", "job-failed", "job-granted", "job-leased", "job-recent"):
        assert await journal.get(job_id) is not None
    assert len(await journal.pending_acks()) == 2


async def test_prune_keeps_at_most_the_newest_finished_rows(
    open_journal: OpenJournal,
) -> None:
    # GIVEN five acked jobs and one printed-not-acked, with room for three finished rows
    journal = await open_journal(max_finished_rows=3)
    for n in range(5):
        await job_in_state(journal, "acked-printed", f"job-{n}", "lease-1")
    await job_in_state(journal, "printed", "job-owed", "lease-1")

    # WHEN the journal is pruned (all rows are recent: age alone would keep them)
    deleted = await journal.prune()

    # THEN the two oldest acked rows go, the owed result stays
    assert deleted == 2
    assert [n for n in range(5) if await journal.get(f"job-{n}") is not None] == [2, 3, 4]
    assert [ack.job_id for ack in await journal.pending_acks()] == ["job-owed"]


async def test_pruned_jobs_can_be_leased_again(open_journal: OpenJournal) -> None:
    # GIVEN an acked, failed job that has been pruned
    journal = await open_journal(max_finished_rows=0)
    await job_in_state(journal, "acked-failed")
    await journal.prune()

    # WHEN the coordinator leases it again
    entry = await journal.record_lease("job-1", "lease-2", PAYLOAD)

    # THEN it is a plain new lease
    assert entry.state is LocalJobState.LEASED
