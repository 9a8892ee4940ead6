"""The ack outbox: order, confirmation, attempts, and survival across restarts."""

from __future__ import annotations

from badgeline.agent.journal import Journal, LocalJobState

from .conftest import OpenJournal
from .helpers import FENCE, PAYLOAD, job_in_state


async def queue_three_results(journal: Journal) -> None:
    """job-c prints first, then job-a fails, then job-b is uncertain: not job-id order."""
    for job_id in ("job-a", "job-b", "job-c"):
        await journal.record_lease(job_id, f"lease-{job_id}", PAYLOAD)
        await journal.record_grant(job_id, f"lease-{job_id}", FENCE)
    await journal.record_printed("job-c", "lease-job-c")
    await journal.record_failed("job-a", "lease-job-a", "paper out")
    await journal.record_uncertain("job-b", "lease-job-b", "link lost mid-send")


async def test_pending_acks_come_in_the_order_the_results_happened(journal: Journal) -> None:
    # GIVEN three results journaled in the order c, a, b
    await queue_three_results(journal)

    # WHEN the outbox is read
    pending = await journal.pending_acks()

    # THEN it lists them in that order, each with its lease, fence, result and error
    assert [(ack.job_id, ack.lease_id, ack.result, ack.fence, ack.error) for ack in pending] == [
        ("job-c", "lease-job-c", "printed", FENCE, None),
        ("job-a", "lease-job-a", "failed", FENCE, "paper out"),
        ("job-b", "lease-job-b", "uncertain", FENCE, "link lost mid-send"),
    ]
    assert [ack.job_id for ack in await journal.pending_acks(limit=2)] == ["job-c", "job-a"]


async def test_mark_acked_removes_one_result_and_keeps_the_order(journal: Journal) -> None:
    # GIVEN three queued results
    await queue_three_results(journal)

    # WHEN the middle one is confirmed, twice (a retried confirmation)
    first = await journal.mark_acked("job-a", "lease-job-a")
    second = await journal.mark_acked("job-a", "lease-job-a")

    # THEN it leaves the outbox once, and the others keep their order
    assert first == second
    assert first.state is LocalJobState.ACKED and first.outcome == "failed"
    assert [ack.job_id for ack in await journal.pending_acks()] == ["job-c", "job-b"]


async def test_unconfirmed_acks_survive_close_and_reopen(open_journal: OpenJournal) -> None:
    # GIVEN three queued results, one confirmed, and the journal closed
    journal = await open_journal()
    await queue_three_results(journal)
    await journal.mark_acked("job-c", "lease-job-c")
    before = await journal.pending_acks()
    await journal.close()

    # WHEN the journal is opened again (an agent restart)
    reopened = await open_journal()

    # THEN the same acks are pending, in the same order, and can be confirmed
    assert await reopened.pending_acks() == before
    await reopened.mark_acked("job-a", "lease-job-a")
    assert [ack.job_id for ack in await reopened.pending_acks()] == ["job-b"]


async def test_ack_attempts_are_counted_and_survive_reopen(open_journal: OpenJournal) -> None:
    # GIVEN a printed job whose ack failed to reach the coordinator twice
    journal = await open_journal()
    await job_in_state(journal, "printed")
    assert await journal.record_ack_attempt("job-1", "lease-1") == 1
    assert await journal.record_ack_attempt("job-1", "lease-1") == 2
    await journal.close()

    # WHEN the journal is reopened
    reopened = await open_journal()

    # THEN the outbox entry and the row both carry the attempts
    [ack] = await reopened.pending_acks()
    entry = await reopened.get("job-1", "lease-1")
    assert ack.attempts == 2
    assert entry is not None and entry.ack_attempts == 2


async def test_an_attempt_after_confirmation_changes_nothing(journal: Journal) -> None:
    # GIVEN an acked job
    await job_in_state(journal, "acked-printed")

    # WHEN a late delivery attempt is counted
    attempts = await journal.record_ack_attempt("job-1", "lease-1")

    # THEN the count does not move: the result is no longer owed
    assert attempts == 0
