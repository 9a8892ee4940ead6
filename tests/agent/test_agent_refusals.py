"""What the agent must not print: refused starts and badges it cannot render.

The coordinator here expires leases after 1 s and fails a job at its first
failed attempt, so refusals and failures show up without long waits.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest

from badgeline.agent.journal import LocalJobState
from badgeline.coordinator.config import CoordinatorSettings
from badgeline.protocol.states import AckResult
from tests.agent.conftest import Kiosk, LiveCoordinator, agent_settings
from tests.agent.journal_prep import crash_after_lease
from tests.helpers import wait_for


@pytest.fixture
def settings(settings: CoordinatorSettings) -> CoordinatorSettings:
    return settings.model_copy(update={"lease_ttl_s": 1.0, "max_attempts": 1})


async def test_a_canceled_job_is_refused_its_start_and_never_printed(
    coordinator: LiveCoordinator, kiosk: Kiosk, start_emulator: Any, run_agent: Any,
    badge_ref: str, tmp_path: Path,
) -> None:  # fmt: skip
    # GIVEN a job the agent leased and journaled before it went down
    emulator = await start_emulator()
    settings = agent_settings("printer-a", coordinator, emulator, tmp_path / "a")
    canceled_id = await kiosk.submit(badge_ref, "printer-a")
    crashed = await crash_after_lease(settings)
    # AND the attendee's badge was canceled meanwhile, and another one queued behind it
    assert await kiosk.cancel(canceled_id) == 200
    next_id = await kiosk.submit(badge_ref, "printer-a")
    # WHEN the agent starts and asks for the start of the canceled job
    agent = await run_agent(settings)
    # THEN it prints the next badge only
    await emulator.wait_until(lambda e: len(e.printed) == 1)
    assert [badge.job_id for badge in emulator.printed] == [next_id]
    # AND the canceled job is journaled as dropped with the coordinator's reason
    entry = await agent.journal.get(canceled_id, crashed.lease_id)
    assert entry is not None and entry.state is LocalJobState.DROPPED
    assert entry.error == "canceled" and entry.granted_at is None
    assert await kiosk.state(canceled_id) == "canceled"


async def test_an_expired_lease_is_refused_then_the_job_prints_once_under_a_new_one(
    coordinator: LiveCoordinator, kiosk: Kiosk, start_emulator: Any, run_agent: Any,
    badge_ref: str, tmp_path: Path,
) -> None:  # fmt: skip
    # GIVEN a journaled lease that expired on the coordinator while the agent was down
    emulator = await start_emulator()
    settings = agent_settings("printer-a", coordinator, emulator, tmp_path / "a")
    job_id = await kiosk.submit(badge_ref, "printer-a")
    crashed = await crash_after_lease(settings)
    await wait_for(lambda: _state_is(kiosk, job_id, "queued"))
    # WHEN the agent starts
    agent = await run_agent(settings)
    # THEN the old lease is never printed, and the job prints once under a new lease
    await wait_for(lambda: _state_is(kiosk, job_id, "printed"))
    old = await agent.journal.get(job_id, crashed.lease_id)
    assert old is not None and old.state is LocalJobState.DROPPED and old.granted_at is None
    newest = await agent.journal.get(job_id)
    assert newest is not None and newest.lease_id != crashed.lease_id
    assert [badge.job_id for badge in emulator.printed] == [job_id]


async def test_unprintable_badges_are_acked_failed_with_the_reason_and_printing_goes_on(
    coordinator: LiveCoordinator, kiosk: Kiosk, start_emulator: Any, run_agent: Any,
    badge_ref: str, core_font_ref: str, tmp_path: Path,
) -> None:  # fmt: skip
    # GIVEN an agent, and badges that cannot print queued before a good one
    emulator = await start_emulator()
    agent = await run_agent(agent_settings("printer-a", coordinator, emulator, tmp_path / "a"))
    missing_file = (tmp_path / "badges" / "nobody.pdf").as_uri()
    # (the agent also reads the artifact:///<sha256>.pdf spelling)
    missing_artifact = f"artifact:///{hashlib.sha256(b'never uploaded').hexdigest()}.pdf"
    reasons = {
        await kiosk.submit(missing_file, "printer-a"): "no such file",
        await kiosk.submit(core_font_ref, "printer-a"): "font_not_embedded",
        await kiosk.submit(missing_artifact, "printer-a"): "not found (HTTP 404)",
    }
    good_id = await kiosk.submit(badge_ref, "printer-a")
    # THEN the good badge prints, once
    await emulator.wait_until(lambda e: len(e.printed) == 1)
    await wait_for(lambda: _state_is(kiosk, good_id, "printed"))
    assert [badge.job_id for badge in emulator.printed] == [good_id]
    # AND each bad one is failed on the coordinator with the agent's reason
    for job_id, reason in reasons.items():
        await wait_for(lambda job_id=job_id: _state_is(kiosk, job_id, "failed"))
        job = await kiosk.job(job_id)
        assert reason in (job["last_error"] or ""), job
        entry = await agent.journal.get(job_id)
        assert entry is not None and entry.state is LocalJobState.ACKED
        assert entry.granted_at is None


async def test_a_failed_printer_write_is_acked_failed_and_the_printer_reported_gone(
    coordinator: LiveCoordinator, kiosk: Kiosk, run_agent: Any, badge_ref: str, tmp_path: Path,
) -> None:  # fmt: skip
    # GIVEN a printer on a device node (a FIFO here) that cannot report status,
    # so the agent only learns it is gone when a write fails
    fifo = tmp_path / "lp0"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    settings = agent_settings(
        "printer-a", coordinator, None, tmp_path / "a",
        printer={"kind": "device", "path": str(fifo), "timeout_s": 0.5},
    )  # fmt: skip
    agent = await run_agent(settings)
    await wait_for(lambda: _ready(agent))
    # WHEN the printer goes away and a badge is granted to it
    os.close(reader)
    job_id = await kiosk.submit(badge_ref, "printer-a")
    # THEN the job fails with the write error, after a journaled grant, never as printed
    await wait_for(lambda: _state_is(kiosk, job_id, "failed"))
    assert "printer write failed" in ((await kiosk.job(job_id))["last_error"] or "")
    entry = await agent.journal.get(job_id)
    assert entry is not None and entry.granted_at is not None and entry.printed_at is None
    assert (entry.state, entry.outcome) == (LocalJobState.ACKED, AckResult.FAILED)
    # AND the agent looks at the printer again and stops taking work for it
    await wait_for(lambda: _not_ready(agent))
    assert agent.watch.latest.reachable is False


async def test_an_uploaded_artifact_prints(
    coordinator: LiveCoordinator, kiosk: Kiosk, start_emulator: Any, run_agent: Any,
    badge_pdf: bytes, tmp_path: Path,
) -> None:  # fmt: skip
    # GIVEN a badge uploaded to the coordinator's artifact store
    ref = await kiosk.upload(badge_pdf, hashlib.sha256(badge_pdf).hexdigest())
    emulator = await start_emulator()
    await run_agent(agent_settings("printer-a", coordinator, emulator, tmp_path / "a"))
    # WHEN a job names it by artifact://
    job_id = await kiosk.submit(ref, "printer-a")
    # THEN the agent fetches it with its token and prints it
    await emulator.wait_until(lambda e: len(e.printed) == 1)
    await wait_for(lambda: _state_is(kiosk, job_id, "printed"))
    assert [badge.job_id for badge in emulator.printed] == [job_id]


async def _ready(agent: Any) -> bool:
    return bool(agent.watch.ready)


async def _not_ready(agent: Any) -> bool:
    return not agent.watch.ready


async def _state_is(kiosk: Kiosk, job_id: str, state: str) -> bool:
    return await kiosk.state(job_id) == state
