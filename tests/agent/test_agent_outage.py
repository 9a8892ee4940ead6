"""The coordinator goes away while the agent is printing: results wait, nothing prints twice."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from badgeline.agent.retry import Backoff
from badgeline.emulator import PrinterEmulator
from tests.agent.conftest import Kiosk, LiveCoordinator, agent_settings
from tests.agent.relay import ReplyHoldingRelay
from tests.helpers import wait_for

# The outbox's back-off in the wake-up test: its first wait is 30-60 s (jitter).
OUTBOX_BACKOFF_S = 60.0


@pytest.fixture
async def emulator(start_emulator: Any) -> PrinterEmulator:
    started: PrinterEmulator = await start_emulator()
    return started


@pytest.fixture
async def relay(emulator: PrinterEmulator) -> AsyncIterator[ReplyHoldingRelay]:
    relay = ReplyHoldingRelay("127.0.0.1", emulator.port)
    await relay.start()
    yield relay
    await relay.stop()


async def test_results_printed_while_the_coordinator_is_down_are_acked_when_it_returns(
    coordinator: LiveCoordinator, kiosk: Kiosk, emulator: PrinterEmulator,
    relay: ReplyHoldingRelay, run_agent: Any, badge_ref: str, tmp_path: Path,
) -> None:  # fmt: skip
    # GIVEN an agent whose printer sits behind a relay, slow to answer status
    agent = await _agent_behind(relay, coordinator, emulator, run_agent, tmp_path)
    await wait_for(lambda: _ready(agent))
    relay.hold_replies()
    first = await kiosk.submit(badge_ref, "printer-a")
    second = await kiosk.submit(badge_ref, "printer-a")
    # AND the first badge has come out: the agent holds its grant and waits for the status
    await emulator.wait_until(lambda e: len(e.printed) == 1)
    # WHEN the coordinator goes down before the agent can ack, and the printer answers
    await coordinator.stop()
    relay.release_replies()
    # THEN the agent journals the print and keeps its ack, failing to deliver it
    await wait_for(lambda: _ack_attempted(agent, first))
    assert [badge.job_id for badge in emulator.printed] == [first]
    # WHEN the coordinator comes back
    await coordinator.start()
    # THEN the ack arrives, the next badge gets its grant, and both jobs end printed, once
    await wait_for(lambda: _state_is(kiosk, first, "printed"))
    await wait_for(lambda: _state_is(kiosk, second, "printed"))
    assert [badge.job_id for badge in emulator.printed] == [first, second]
    await wait_for(lambda: _outbox_empty(agent))  # once each answer reaches the agent


async def test_acks_go_out_as_soon_as_the_coordinator_answers_again_not_after_the_backoff(
    coordinator: LiveCoordinator, kiosk: Kiosk, emulator: PrinterEmulator,
    relay: ReplyHoldingRelay, run_agent: Any, badge_ref: str, tmp_path: Path,
) -> None:  # fmt: skip
    # GIVEN an agent whose ack outbox backs off for at least 30 s after a failed ack
    # (its other loops keep the test settings' short back-off)
    agent = await _agent_behind(relay, coordinator, emulator, run_agent, tmp_path)
    agent.outbox.backoff = Backoff(OUTBOX_BACKOFF_S, OUTBOX_BACKOFF_S)
    await wait_for(lambda: _ready(agent))
    relay.hold_replies()
    job_id = await kiosk.submit(badge_ref, "printer-a")
    await emulator.wait_until(lambda e: len(e.printed) == 1)
    # AND a printed badge whose ack found the coordinator down
    await coordinator.stop()
    relay.release_replies()
    await wait_for(lambda: _ack_attempted(agent, job_id))
    # WHEN the coordinator comes back (and the heartbeat reaches it)
    await coordinator.start()
    # THEN the ack arrives well within the outbox's back-off
    await wait_for(lambda: _state_is(kiosk, job_id, "printed"), timeout_s=OUTBOX_BACKOFF_S / 4)

    # AND the agent takes it off its outbox once the answer reaches it (a moment after
    # the coordinator recorded it)
    await wait_for(lambda: _outbox_empty(agent), timeout_s=OUTBOX_BACKOFF_S / 4)


async def test_a_start_grant_is_asked_again_as_soon_as_the_coordinator_answers(
    coordinator: LiveCoordinator, kiosk: Kiosk, emulator: PrinterEmulator,
    relay: ReplyHoldingRelay, run_agent: Any, badge_ref: str, tmp_path: Path,
) -> None:  # fmt: skip
    # GIVEN an agent whose start call backs off for at least 30 s after a failure
    agent = await _agent_behind(relay, coordinator, emulator, run_agent, tmp_path)
    agent._print_loop.grants.backoff = Backoff(OUTBOX_BACKOFF_S, OUTBOX_BACKOFF_S)
    await wait_for(lambda: _ready(agent))
    relay.hold_replies()
    first = await kiosk.submit(badge_ref, "printer-a")
    second = await kiosk.submit(badge_ref, "printer-a")
    await emulator.wait_until(lambda e: len(e.printed) == 1)
    # AND the second badge's start call found the coordinator down
    await coordinator.stop()
    relay.release_replies()
    await wait_for(lambda: _true(agent._print_loop.grants.outage.is_down))
    # WHEN the coordinator comes back (and the heartbeat reaches it)
    await coordinator.start()
    # THEN the grant is asked for again well within the back-off, and both print once
    await wait_for(lambda: _state_is(kiosk, second, "printed"), timeout_s=OUTBOX_BACKOFF_S / 4)
    await wait_for(lambda: _state_is(kiosk, first, "printed"))
    assert [badge.job_id for badge in emulator.printed] == [first, second]


async def test_heartbeats_resume_as_soon_as_the_coordinator_answers_again_not_after_the_backoff(
    coordinator: LiveCoordinator, emulator: PrinterEmulator, relay: ReplyHoldingRelay,
    run_agent: Any, tmp_path: Path,
) -> None:  # fmt: skip
    # GIVEN an agent whose heartbeat backs off for at least 30 s after a failure (its
    # lease loop keeps the test settings' short back-off)
    agent = await _agent_behind(relay, coordinator, emulator, run_agent, tmp_path)
    agent.heartbeat.backoff = Backoff(OUTBOX_BACKOFF_S, OUTBOX_BACKOFF_S)
    await wait_for(lambda: _ready(agent))
    # AND a heartbeat that found the coordinator down
    await coordinator.stop()
    await wait_for(lambda: _true(agent.heartbeat.outage.is_down))
    # WHEN the coordinator comes back (and the lease long-poll reaches it)
    await coordinator.start()
    # THEN the printer beats again well within the heartbeat's back-off: the
    # coordinator would otherwise count the beats it misses meanwhile
    await wait_for(lambda: _true(not agent.heartbeat.outage.is_down),
                   timeout_s=OUTBOX_BACKOFF_S / 4)  # fmt: skip


async def _agent_behind(
    relay: ReplyHoldingRelay, coordinator: LiveCoordinator, emulator: PrinterEmulator,
    run_agent: Any, tmp_path: Path,
) -> Any:  # fmt: skip
    """An agent whose printer sits behind `relay`, slow to answer status: a long
    timeout, and no routine probes that would also wait on the relay."""
    return await run_agent(agent_settings(
        "printer-a", coordinator, emulator, tmp_path / "a",
        printer={"kind": "emulator", "host": "127.0.0.1", "port": relay.port, "timeout_s": 10},
        probe_interval_s=60,
    ))  # fmt: skip


async def _true(value: bool) -> bool:
    return value


async def _ready(agent: Any) -> bool:
    return bool(agent.watch.ready)


async def _ack_attempted(agent: Any, job_id: str) -> bool:
    return any(ack.job_id == job_id and ack.attempts >= 1
               for ack in await agent.journal.pending_acks())  # fmt: skip


async def _state_is(kiosk: Kiosk, job_id: str, state: str) -> bool:
    return await kiosk.state(job_id) == state


async def _outbox_empty(agent: Any) -> bool:
    return not await agent.journal.pending_acks()
