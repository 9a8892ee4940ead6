"""Start-up recovery: each way a crash can leave the journal, and what the next start does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from badgeline.agent.journal import LocalJobState
from badgeline.protocol.states import AckResult
from tests.agent.conftest import Kiosk, LiveCoordinator, agent_settings
from tests.agent.journal_prep import crash_after_grant, crash_after_lease, crash_after_print
from tests.helpers import wait_for
from tests.journal.helpers import tear_index_page


async def test_printed_but_unacked_result_is_acked_after_restart_and_not_reprinted(
    coordinator: LiveCoordinator, kiosk: Kiosk, start_emulator: Any, run_agent: Any,
    badge_ref: str, badge_pdf: bytes, tmp_path: Path,
) -> None:  # fmt: skip
    # GIVEN an agent that printed a badge and journaled it, then died before the ack
    emulator = await start_emulator()
    settings = agent_settings("printer-a", coordinator, emulator, tmp_path / "a")
    job_id = await kiosk.submit(badge_ref, "printer-a")
    crashed = await crash_after_print(settings, badge_pdf)
    await emulator.wait_until(lambda e: len(e.printed) == 1)
    assert await kiosk.state(job_id) == "printing"
    # WHEN a new agent starts on that journal
    agent = await run_agent(settings)
    # THEN it sends the ack it owed, and the job is printed, once
    assert [ack.job_id for ack in agent.recovery.acks_to_send] == [job_id]
    await wait_for(lambda: _state_is(kiosk, job_id, "printed"))
    await wait_for(lambda: _outbox_empty(agent))
    entry = await agent.journal.get(job_id, crashed.lease_id)
    assert entry is not None and entry.state is LocalJobState.ACKED
    assert [badge.job_id for badge in emulator.printed] == [job_id]


async def test_granted_but_unfinished_print_is_reported_uncertain_never_reprinted_locally(
    coordinator: LiveCoordinator, kiosk: Kiosk, start_emulator: Any, run_agent: Any,
    badge_ref: str, tmp_path: Path,
) -> None:  # fmt: skip
    # GIVEN an agent that journaled a start grant and lost power before the print's result
    emulator = await start_emulator()
    settings = agent_settings("printer-a", coordinator, emulator, tmp_path / "a")
    job_id = await kiosk.submit(badge_ref, "printer-a")
    crashed = await crash_after_grant(settings)
    # WHEN a new agent starts on that journal
    agent = await run_agent(settings)
    # THEN it reports the grant as uncertain instead of printing it again on its own
    assert [entry.job_id for entry in agent.recovery.marked_uncertain] == [job_id]
    # AND the coordinator re-dispatches it, flagged, and it prints once under a new lease
    await wait_for(lambda: _state_is(kiosk, job_id, "printed"))
    job = await kiosk.job(job_id)
    assert job["possible_duplicate"] is True
    history = await agent.journal.history(job_id)
    old, new = history[0], history[-1]
    assert (old.lease_id, old.state, old.outcome) == (
        crashed.lease_id, LocalJobState.ACKED, AckResult.UNCERTAIN,
    )  # fmt: skip
    assert new.lease_id != crashed.lease_id and new.outcome is AckResult.PRINTED
    assert [badge.job_id for badge in emulator.printed] == [job_id]


async def test_leased_but_never_granted_job_asks_for_its_grant_and_prints_once(
    coordinator: LiveCoordinator, kiosk: Kiosk, start_emulator: Any, run_agent: Any,
    badge_ref: str, tmp_path: Path,
) -> None:  # fmt: skip
    # GIVEN an agent that journaled a lease and died before asking for the start grant
    emulator = await start_emulator()
    settings = agent_settings("printer-a", coordinator, emulator, tmp_path / "a")
    job_id = await kiosk.submit(badge_ref, "printer-a")
    crashed = await crash_after_lease(settings)
    # WHEN a new agent starts on that journal while the lease is still valid
    agent = await run_agent(settings)
    # THEN it asks for the grant under that same lease and prints the badge once
    assert [entry.job_id for entry in agent.recovery.grants_to_retry] == [job_id]
    await emulator.wait_until(lambda e: len(e.printed) == 1)
    await wait_for(lambda: _state_is(kiosk, job_id, "printed"))
    entry = await agent.journal.get(job_id)
    assert entry is not None and entry.lease_id == crashed.lease_id
    assert [badge.job_id for badge in emulator.printed] == [job_id]


async def test_a_print_owed_in_a_journal_with_a_torn_page_is_still_acked(
    coordinator: LiveCoordinator, kiosk: Kiosk, start_emulator: Any, run_agent: Any,
    badge_ref: str, badge_pdf: bytes, tmp_path: Path,
) -> None:  # fmt: skip
    # GIVEN an agent that printed a badge and journaled it, then lost power before the
    # ack, and the power cut tore one page of the journal (an index's, not the rows')
    emulator = await start_emulator()
    settings = agent_settings("printer-a", coordinator, emulator, tmp_path / "a")
    job_id = await kiosk.submit(badge_ref, "printer-a")
    crashed = await crash_after_print(settings, badge_pdf)
    tear_index_page(settings.journal_path, "jobs_by_state")
    # WHEN a new agent starts: the journal fails its check and is rebuilt
    agent = await run_agent(settings)
    assert agent.journal.moved_aside is not None
    # THEN the result it owed still reaches the coordinator: the job does not sit
    # `printing` for ever on a healthy printer, and the badge is not printed again
    await wait_for(lambda: _state_is(kiosk, job_id, "printed"), timeout_s=5.0)
    entry = await agent.journal.get(job_id, crashed.lease_id)
    assert entry is not None and entry.outcome is AckResult.PRINTED
    assert [badge.job_id for badge in emulator.printed] == [job_id]


async def _state_is(kiosk: Kiosk, job_id: str, state: str) -> bool:
    return await kiosk.state(job_id) == state


async def _outbox_empty(agent: Any) -> bool:
    return not await agent.journal.pending_acks()
