"""The Pi's SD card fills up (or goes read-only) under a running agent: it keeps going.

Each agent here is its own process, `badgeline agent` as systemd runs it, and the test
fills its card by telling the kernel to refuse any write to the agent's files past a
size (RLIMIT_FSIZE, set on the running process from outside): SQLite then fails its
writes as on a full card. Its log goes through a pipe, as to journald, so it still
gets out. The coordinator, Redis and the printer emulator are the real ones.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from badgeline.agent.config import AgentSettings
from badgeline.agent.journal import Journal, JournalSettings
from badgeline.emulator import Fault, PrinterEmulator
from tests.agent.agent_process import RunningAgent
from tests.agent.conftest import Kiosk, LiveCoordinator, agent_settings
from tests.agent.journal_prep import crash_after_lease, crash_after_print
from tests.helpers import wait_for

# No file of the agent's takes another byte: every journal write fails.
CARD_FULL = 0
# Files hold at most 32 KiB: room for SQLite's shared-memory index (32 KiB) when the
# journal opens, and for 7 WAL frames of a 4 KiB page; a transaction that rewrites
# more pages than that fails (see `_old_journal`).
CARD_NEARLY_FULL = 32 * 1024
DAY_S = 24 * 3600.0


async def test_an_ack_confirmed_while_the_card_is_full_is_marked_once_space_is_back(
    coordinator: LiveCoordinator, kiosk: Kiosk, start_emulator: Any, start_agent: Any,
    badge_pdf: bytes, badge_ref: str, tmp_path: Path,
) -> None:  # fmt: skip
    # GIVEN a badge that came out and was journaled `printed`, its ack still owed
    emulator: PrinterEmulator = await start_emulator()
    settings = agent_settings("printer-a", coordinator, emulator, tmp_path / "a")
    job_id = await kiosk.submit(badge_ref, "printer-a")
    await crash_after_print(settings, badge_pdf)
    # AND an agent on it that found the coordinator away, and counted that failed ack
    await coordinator.stop()
    agent = await start_agent(settings, emulator)
    await wait_for(lambda: agent.has_logged("link_down", link="ack"))
    # WHEN the card fills up
    agent.process.limit_file_size(CARD_FULL)
    # THEN a failed delivery it cannot count is logged, and the agent carries on
    await wait_for(lambda: agent.has_logged(
        "journal_failed", job_id=job_id, writing="record_ack_attempt"))  # fmt: skip
    # WHEN the coordinator comes back and confirms the ack
    await coordinator.start()
    await wait_for(lambda: _state_is(kiosk, job_id, "printed"))
    # THEN the agent cannot note the confirmation: it logs that, and keeps running
    await wait_for(lambda: agent.has_logged("journal_failed", job_id=job_id, writing="mark_acked"))
    assert await agent.healthy()
    # AND it reports the problem where a tech looks (/status), the result still owed
    await wait_for(lambda: _last_error_is(agent, "journal_failed"))
    assert (await agent.journal())["printed"] == 1
    # WHEN space comes back
    agent.process.limit_file_size(None)
    # THEN the ack goes out again and is marked, with no second badge
    await wait_for(lambda: _journal_has(agent, printed=0, acked=1))
    assert await agent.healthy()
    assert await kiosk.state(job_id) == "printed"
    assert [badge.job_id for badge in emulator.printed] == [job_id]


async def test_a_start_refused_while_the_card_is_full_does_not_stop_the_agent(
    coordinator: LiveCoordinator, kiosk: Kiosk, start_emulator: Any, start_agent: Any,
    badge_ref: str, tmp_path: Path,
) -> None:  # fmt: skip
    # GIVEN a lease journaled before the agent went down, whose job was canceled since
    emulator: PrinterEmulator = await start_emulator(fault=Fault.PAPER_OUT)
    settings = agent_settings("printer-a", coordinator, emulator, tmp_path / "a")
    canceled_id = await kiosk.submit(badge_ref, "printer-a")
    await crash_after_lease(settings)
    assert await kiosk.cancel(canceled_id) == 200
    # AND the agent back up, waiting for paper before it asks to print that lease
    agent = await start_agent(settings, emulator)
    await wait_for(lambda: agent.has_logged("lease_resumed", job_id=canceled_id))
    # WHEN the card fills up and the paper is loaded
    agent.process.limit_file_size(CARD_FULL)
    emulator.fault = Fault.NONE
    # THEN the refusal it cannot journal is logged, nothing prints, and the agent runs on
    await wait_for(lambda: agent.has_logged(
        "journal_failed", job_id=canceled_id, writing="record_dropped"))  # fmt: skip
    await wait_for(lambda: agent.has_logged("start_refused", job_id=canceled_id, reason="canceled"))
    assert await agent.healthy()
    assert (await agent.journal())["leased"] == 1  # kept: the next start asks again
    # WHEN space comes back and the next badge is scanned
    agent.process.limit_file_size(None)
    next_id = await kiosk.submit(badge_ref, "printer-a")
    # THEN it prints once and is acked
    await wait_for(lambda: _state_is(kiosk, next_id, "printed"))
    await wait_for(lambda: _journal_has(agent, acked=1))
    assert [badge.job_id for badge in emulator.printed] == [next_id]


async def test_a_prune_that_cannot_write_does_not_stop_the_agent_and_runs_once_space_is_back(
    coordinator: LiveCoordinator, start_emulator: Any, start_agent: Any, tmp_path: Path
) -> None:
    # GIVEN a journal with finished rows past their retention, on a nearly full card
    emulator: PrinterEmulator = await start_emulator()
    settings = agent_settings("printer-a", coordinator, emulator, tmp_path / "a")
    await _old_journal(settings, dropped=30)
    # WHEN the agent starts, and prunes them (more pages than the card has room for)
    agent = await start_agent(settings, emulator, file_size_limit=CARD_NEARLY_FULL)
    # THEN the failed prune is logged, and the agent runs
    await wait_for(lambda: agent.has_logged("journal_failed", writing="prune"))
    assert await agent.healthy()
    assert (await agent.journal())["dropped"] == 30
    # WHEN space comes back
    agent.process.limit_file_size(None)
    # THEN the prune runs by itself
    await wait_for(lambda: _journal_has(agent, dropped=0))
    assert await agent.healthy()


async def test_start_up_recovery_that_cannot_write_waits_for_space_instead_of_stopping_the_agent(
    coordinator: LiveCoordinator, start_emulator: Any, start_agent: Any, tmp_path: Path
) -> None:
    # GIVEN a journal left with grants and no results (power lost mid-print), on a
    # card too full to mark them all uncertain
    emulator: PrinterEmulator = await start_emulator()
    settings = agent_settings("printer-a", coordinator, emulator, tmp_path / "a")
    await _old_journal(settings, granted=20)
    # WHEN the agent starts
    agent = await start_agent(settings, emulator, file_size_limit=CARD_NEARLY_FULL)
    # THEN the recovery it cannot write is logged, and the agent runs, printing nothing
    await wait_for(lambda: agent.has_logged("journal_failed", writing="recover"))
    assert await agent.healthy()
    assert (await agent.journal())["granted"] == 20
    # WHEN space comes back
    agent.process.limit_file_size(None)
    # THEN the grants become `uncertain` and are reported (the coordinator does not
    # know these jobs, so each ack is abandoned and marked), and nothing prints
    await wait_for(lambda: _journal_has(agent, granted=0, uncertain=0, acked=20))
    assert len(agent.logged("recovered_uncertain")) == 20
    assert not emulator.printed


async def _old_journal(settings: AgentSettings, *, dropped: int = 0, granted: int = 0) -> None:
    """Rows an earlier run left, 9 days ago; each about a third of a page, so that
    pruning or recovering them all rewrites more pages than CARD_NEARLY_FULL leaves."""
    nine_days_ago = time.time() - 9 * DAY_S
    padding = {"padding": "x" * 1500}
    journal = await Journal.open(
        JournalSettings(path=settings.journal_path), clock=lambda: nine_days_ago
    )
    async with journal:
        for n in range(dropped):
            await journal.record_lease(f"job-old-{n}", "lease-1", padding)
            await journal.record_dropped(f"job-old-{n}", "lease-1", "canceled")
        for n in range(granted):
            await journal.record_lease(f"job-gone-{n}", "lease-1", padding)
            await journal.record_grant(f"job-gone-{n}", "lease-1", 1)


async def _state_is(kiosk: Kiosk, job_id: str, state: str) -> bool:
    return await kiosk.state(job_id) == state


async def _last_error_is(agent: RunningAgent, event: str) -> bool:
    last = (await agent.status())["last_error"]
    return last is not None and last.get("event") == event


async def _journal_has(agent: RunningAgent, **counts: int) -> bool:
    journal = await agent.journal()
    return all(journal.get(state) == count for state, count in counts.items())
