"""Pipelined printing (print_pipeline_depth 2): the next badge goes out while one prints.

Counted at the emulator: every badge on paper exactly once, also when a fault
clears the printer's buffer with two badges in it.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from badgeline.agent.service import Agent
from badgeline.emulator import Fault, PrinterEmulator
from badgeline.protocol.states import AckResult
from tests.agent.conftest import Kiosk, LiveCoordinator, agent_settings
from tests.helpers import wait_for

# Room for a few whole badges in the printer's receive buffer, so a badge sent
# behind the one printing shows up as a page waiting for the head.
BIG_BUFFER = 1024 * 1024


def printed_job_ids(emulator: PrinterEmulator) -> list[str | None]:
    return [badge.job_id for badge in emulator.printed]


def one_printing_one_waiting(emulator: PrinterEmulator) -> bool:
    status = emulator.status()
    return bool(status["printing"]) and status["queued"] >= 1


async def all_in_state(kiosk: Kiosk, job_ids: list[str], state: str) -> bool:
    return all([await kiosk.state(job_id) == state for job_id in job_ids])


async def first_lease_uncertain(agent: Agent, job_id: str) -> bool:
    history = await agent.journal.history(job_id)
    return bool(history) and history[0].outcome is AckResult.UNCERTAIN


async def test_the_next_badge_reaches_the_printer_while_one_prints(
    coordinator: LiveCoordinator, kiosk: Kiosk, start_emulator: Any, run_agent: Any,
    badge_ref: str, tmp_path: Path,
) -> None:  # fmt: skip
    # GIVEN a printer that takes a while per badge, and its agent (default settings:
    # "auto" confirmation, pipeline depth 2), probing the printer every 0.1 s
    emulator = await start_emulator(ms_per_badge=300, buffer_bytes=BIG_BUFFER)
    await run_agent(agent_settings("printer-a", coordinator, emulator, tmp_path / "a"))
    # WHEN four badges are submitted
    job_ids = [await kiosk.submit(badge_ref, "printer-a") for _ in range(4)]
    # THEN at some point a badge waits in the printer's buffer while another prints
    await emulator.wait_until(one_printing_one_waiting, timeout=15)
    # AND each comes out once, in order (status probes between the polls lost no
    # confirmation: a lost one would have been reported uncertain and reprinted)
    await emulator.wait_until(lambda e: len(e.printed) >= 4, timeout=15)
    await wait_for(lambda: all_in_state(kiosk, job_ids, "printed"))
    assert printed_job_ids(emulator) == job_ids


async def test_a_fault_with_two_badges_in_flight_leaves_both_uncertain_and_each_prints_once(
    coordinator: LiveCoordinator, kiosk: Kiosk, start_emulator: Any, run_agent: Any,
    badge_ref: str, tmp_path: Path,
) -> None:  # fmt: skip
    # GIVEN a slow printer known to confirm by GS ( H, with an agent pipelining two badges
    emulator, agent = await _pipelining(coordinator, start_emulator, run_agent, tmp_path, 3000)
    job_ids = [await kiosk.submit(badge_ref, "printer-a") for _ in range(2)]
    await emulator.wait_until(one_printing_one_waiting, timeout=10)
    # WHEN the paper runs out: the printer clears its buffer, both badges with it
    emulator.fault = Fault.PAPER_OUT
    # THEN the agent reports both uncertain (it does not print them again itself)
    for job_id in job_ids:
        await wait_for(lambda job_id=job_id: first_lease_uncertain(agent, job_id))
    assert emulator.printed == [] and emulator.status()["discarded"] == 2
    # WHEN paper is loaded
    emulator.ms_per_badge = 0
    emulator.fault = Fault.NONE
    # THEN the coordinator's reprint puts each badge on paper exactly once
    await wait_for(lambda: all_in_state(kiosk, job_ids, "printed"), timeout_s=20)
    assert Counter(printed_job_ids(emulator)) == Counter(job_ids)


async def test_an_unanswered_badge_puts_the_answered_one_behind_it_in_doubt_too(
    coordinator: LiveCoordinator, kiosk: Kiosk, start_emulator: Any, run_agent: Any,
    badge_ref: str, tmp_path: Path,
) -> None:  # fmt: skip
    # A request can go unanswered because a fault too short for the agent to see
    # cleared the printer's buffer, spoiling the start of the badge behind while that
    # badge's own request, arriving after, is still answered (tests/chaos/
    # test_known_losses.py lost a badge so when the answer was trusted). Unless the
    # agent saw a fault between the two sends, both are in doubt.
    # GIVEN a slow printer, an agent pipelining two badges with a short timeout,
    # and a printer that will lose the first badge's process ID request
    emulator, agent = await _pipelining(
        coordinator, start_emulator, run_agent, tmp_path, 800, print_confirm_timeout_s=2.0
    )
    emulator.lose_process_ids = 1
    # WHEN two badges go out one behind the other, and only the second is answered
    unanswered = await kiosk.submit(badge_ref, "printer-a")
    answered = await kiosk.submit(badge_ref, "printer-a")
    await emulator.wait_until(one_printing_one_waiting, timeout=10)
    # THEN both are uncertain (nothing is ever lost), and the coordinator reprints both
    for job_id in (unanswered, answered):
        await wait_for(lambda job_id=job_id: first_lease_uncertain(agent, job_id), timeout_s=15)
    await wait_for(lambda: all_in_state(kiosk, [unanswered, answered], "printed"), timeout_s=20)
    assert Counter(printed_job_ids(emulator)) == Counter([unanswered, answered] * 2)


async def _pipelining(
    coordinator: LiveCoordinator, start_emulator: Any, run_agent: Any, tmp_path: Path,
    ms_per_badge: int, **settings: Any,
) -> tuple[PrinterEmulator, Agent]:  # fmt: skip
    """A slow printer, and an agent that confirms by GS ( H, pipelining two badges."""
    emulator = await start_emulator(ms_per_badge=ms_per_badge, buffer_bytes=BIG_BUFFER)
    agent = await run_agent(agent_settings(
        "printer-a", coordinator, emulator, tmp_path / "a", print_confirmation="process_id",
        print_pipeline_depth=2, **settings,
    ))  # fmt: skip
    return emulator, agent


async def test_one_lost_answer_does_not_make_the_agent_trust_a_status_probe_after_it(
    coordinator: LiveCoordinator, kiosk: Kiosk, start_emulator: Any, run_agent: Any,
    badge_ref: str, tmp_path: Path,
) -> None:  # fmt: skip
    # GIVEN a printer that answers GS ( H but loses its very first answer (a request
    # that arrived during a blink offline), and an agent left to learn ("auto") how
    # to confirm its badges, with a short confirmation timeout
    emulator = await start_emulator(buffer_bytes=BIG_BUFFER)
    emulator.lose_process_ids = 1
    await run_agent(agent_settings(
        "printer-a", coordinator, emulator, tmp_path / "a", print_confirm_timeout_s=2.0,
    ))  # fmt: skip
    first = await kiosk.submit(badge_ref, "printer-a")
    # (that badge is reported uncertain, and the coordinator's reprint is answered)
    await wait_for(lambda: all_in_state(kiosk, [first], "printed"), timeout_s=10)
    # WHEN the printer slows down and the next badge goes out
    emulator.ms_per_badge = 800
    second = await kiosk.submit(badge_ref, "printer-a")
    # THEN the agent reports it printed only once it is on paper: a healthy status
    # right after the bytes says nothing about a badge still in the printer's buffer
    await wait_for(lambda: all_in_state(kiosk, [second], "printed"), timeout_s=10)
    assert second in printed_job_ids(emulator)
