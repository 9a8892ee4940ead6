"""What the agent must not print: refused starts and badges it cannot render.

The coordinator here expires leases after 4 s and fails a job at its first
failed attempt, so refusals and failures show up without long waits.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from badgeline.agent.client import CoordinatorClient
from badgeline.agent.journal import Journal, JournalEntry, JournalSettings, LocalJobState
from badgeline.agent.loops.ack import AckOutbox
from badgeline.agent.loops.print import PrintLoop
from badgeline.agent.loops.probe import PrinterWatch
from badgeline.agent.prepare import JobTicket, PreparedBadge
from badgeline.agent.printers import AsyncPrinterLink, UsbConnection, UsbLink
from badgeline.agent.retry import Backoff
from badgeline.agent.slots import JobSlots
from badgeline.badge import badge_to_escpos
from badgeline.coordinator.config import CoordinatorSettings
from badgeline.coordinator.store.keys import VenueKeys
from badgeline.protocol.models import LeasedJob
from badgeline.protocol.states import AckResult
from tests.agent.conftest import Kiosk, LiveCoordinator, agent_settings
from tests.agent.journal_prep import crash_after_lease, lease_one
from tests.conftest import agent_token
from tests.helpers import wait_for
from tests.printers.fake_usb import FakeUsbPrinterBackend


@pytest.fixture
def settings(settings: CoordinatorSettings) -> CoordinatorSettings:
    # Leases of 4 s: short, yet a badge's preparation (half the lease) still fits in it
    # on a loaded machine.
    return settings.model_copy(update={"lease_ttl_s": 4.0, "max_attempts": 1})


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
        await kiosk.submit(missing_file, "printer-a"): ("not_found", "no such badge file"),
        await kiosk.submit(core_font_ref, "printer-a"): ("font_not_embedded", "without embedding"),
        await kiosk.submit(missing_artifact, "printer-a"): ("not_found", "HTTP 404"),
    }
    good_id = await kiosk.submit(badge_ref, "printer-a")
    # THEN the good badge prints, once
    await emulator.wait_until(lambda e: len(e.printed) == 1)
    await wait_for(lambda: _state_is(kiosk, good_id, "printed"))
    assert [badge.job_id for badge in emulator.printed] == [good_id]
    # AND each bad one is failed on the coordinator with the agent's classified reason
    for job_id, (reason, text) in reasons.items():
        await wait_for(lambda job_id=job_id: _state_is(kiosk, job_id, "failed"))
        job = await kiosk.job(job_id)
        assert job["failure_reason"] == reason and text in (job["last_error"] or ""), job
        assert job["failed_for_good"] is True  # permanent: never retried
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


async def test_a_job_this_agent_cannot_read_fails_alone_and_the_lease_prints_the_rest(
    coordinator: LiveCoordinator, kiosk: Kiosk, start_emulator: Any, run_agent: Any,
    badge_ref: str, tmp_path: Path,
) -> None:  # fmt: skip
    # GIVEN two queued jobs, the first naming its badge in a way this agent cannot read
    # (a source kind a newer coordinator might take), leased together
    emulator = await start_emulator()
    unreadable_id = await kiosk.submit(badge_ref, "printer-a")
    next_id = await kiosk.submit(badge_ref, "printer-a")
    key = VenueKeys(coordinator.settings.venue).job(unreadable_id)
    payload = json.loads(await coordinator.redis.hget(key, "payload"))
    await coordinator.redis.hset(
        key, "payload", json.dumps({**payload, "badge_pdf_ref": "s3://bucket/badge.pdf"})
    )
    # WHEN the agent leases them
    settings = agent_settings("printer-a", coordinator, emulator, tmp_path / "a", prefetch=2)
    agent = await run_agent(settings)
    # THEN the readable one prints, once, and the agent keeps running
    await wait_for(lambda: _state_is(kiosk, next_id, "printed"))
    assert [badge.job_id for badge in emulator.printed] == [next_id]
    assert agent.loops_not_running() == []
    # AND the unreadable one failed as that job's problem, for good, saying which field
    await wait_for(lambda: _state_is(kiosk, unreadable_id, "failed"))
    job = await kiosk.job(unreadable_id)
    assert job["failure_reason"] == "bad_reference" and "badge_pdf_ref" in job["last_error"], job
    assert job["failed_for_good"] is True
    entry = await agent.journal.get(unreadable_id)
    assert entry is not None and entry.state is LocalJobState.ACKED and entry.granted_at is None


async def _state_is(kiosk: Kiosk, job_id: str, state: str) -> bool:
    return await kiosk.state(job_id) == state


async def test_a_badge_the_printer_took_whole_is_uncertain_when_only_its_request_is_cut_off(
    coordinator: LiveCoordinator, kiosk: Kiosk, badge_ref: str, badge_pdf: bytes,
    tmp_path: Path,
) -> None:  # fmt: skip
    # GIVEN a USB printer that will take this badge's bytes, cut included, and then no
    # more (its paper runs out with the badge in its buffer): the bytes after the cut,
    # the agent's GS ( H request, time out
    job_id = await kiosk.submit(badge_ref, "printer-a")
    usb = FakeUsbPrinterBackend()
    settings = agent_settings(
        "printer-a", coordinator, None, tmp_path / "a",
        printer={"kind": "usb", "vendor_id": usb.vendor_id, "product_id": usb.product_id},
    )  # fmt: skip
    job = await lease_one(settings)
    escpos = badge_to_escpos(badge_pdf, settings.effective_width_dots, job.job_id)
    # WHEN the print loop is handed that journaled lease's badge
    async with (
        await Journal.open(JournalSettings(path=settings.journal_path)) as journal,
        CoordinatorClient(coordinator.url, "printer-a", agent_token("printer-a")) as client,
    ):  # fmt: skip
        await journal.record_lease(job.job_id, job.lease_id, job.job)
        entry = await _print_one(client, journal, usb, escpos, job)
    # THEN the whole badge is in the printer, and the agent does not call it failed
    # (the coordinator would print it again, unflagged): it may well come out
    assert usb.written_bytes().endswith(escpos)
    assert entry.outcome is AckResult.UNCERTAIN, entry
    assert (await kiosk.job(job_id))["state"] != "retrying"


async def _print_one(
    client: CoordinatorClient, journal: Journal, usb: FakeUsbPrinterBackend, escpos: bytes,
    job: LeasedJob,
) -> JournalEntry:  # fmt: skip
    """Run a print loop on one badge until its result is journaled; the printer takes
    the badge's bytes and no more."""
    connection = UsbConnection(vendor_id=usb.vendor_id, product_id=usb.product_id, timeout_ms=200)
    async_link = AsyncPrinterLink(UsbLink(connection, backend=usb))
    watch = PrinterWatch("printer-a")
    watch.update(await async_link.probe())
    usb.accept_limit = len(usb.written_bytes()) + len(escpos)
    slots = JobSlots(2)
    slots.take()
    queue: asyncio.Queue[PreparedBadge] = asyncio.Queue()
    ticket = JobTicket("printer-a", job.job_id, job.lease_id, dict(job.job))
    queue.put_nowait(PreparedBadge(ticket, escpos))
    loop = PrintLoop(
        client=client, journal=journal, link=async_link, watch=watch,
        outbox=AckOutbox(client, journal, Backoff(0.05, 0.5)), slots=slots, queue=queue,
        backoff=Backoff(0.05, 0.5), printer_lock=asyncio.Lock(), confirm_timeout_s=2.0,
    )  # fmt: skip
    stopping = asyncio.Event()
    running = asyncio.create_task(loop.run(stopping))

    async def finished() -> JournalEntry | None:
        entry = await journal.get(job.job_id, job.lease_id)
        return entry if entry is not None and entry.outcome is not None else None

    try:
        return await wait_for(finished)
    finally:
        stopping.set()
        await running
        await async_link.close()
