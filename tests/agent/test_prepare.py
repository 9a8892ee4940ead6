"""The render worker runs only while badges come: spawned by a badge, gone after an idle spell."""

from __future__ import annotations

import asyncio
import logging
import os
import tempfile
import threading
from pathlib import Path

import aiohttp
import pytest

from badgeline.agent.badge_threads import badge_thread
from badgeline.agent.fetch import BadgeFetcher
from badgeline.agent.http_client import HttpClient
from badgeline.agent.prepare import MIN_BUDGET_S, BadgePreparer, BadgeUnprintable, JobTicket
from badgeline.badge import DEFAULT_LIMITS
from badgeline.protocol.failures import FailureReason, is_permanent
from tests.agent.conftest import local_sources
from tests.agent.hostile_server import FETCH_BOUND_S, HostileServer
from tests.helpers import wait_for


def ticket(ref: str, job_id: str) -> JobTicket:
    return JobTicket("printer-a", job_id, f"lease-{job_id}", {"badge_pdf_ref": ref})


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_the_worker_starts_with_a_badge_and_exits_when_idle(
    tmp_path: Path, badge_pdf: bytes
) -> None:
    pdf = tmp_path / "badge.pdf"
    pdf.write_bytes(badge_pdf)
    async with aiohttp.ClientSession() as session:
        fetcher = BadgeFetcher(session, sources=local_sources(Path(tempfile.gettempdir())),
                               coordinator_url=None, artifact_headers={},
                               max_bytes=DEFAULT_LIMITS.max_bytes, timeout_s=5,
                               retry_initial_s=0.01)  # fmt: skip
        preparer = BadgePreparer(fetcher, width_dots=384, limits=DEFAULT_LIMITS, footer=True,
                                 in_sandbox=True, worker_idle_s=0.3)  # fmt: skip
        await preparer.start()
        try:
            assert preparer.worker_pid is None  # an idle agent is one process
            first = await preparer.prepare(ticket(pdf.as_uri(), "job-1"))
            pid = preparer.worker_pid
            assert first.data and pid is not None

            async def worker_gone() -> bool:
                return preparer.worker_pid is None and not alive(pid)

            await wait_for(worker_gone, timeout_s=10)
            again = await preparer.prepare(ticket(pdf.as_uri(), "job-1"))
            assert again.data == first.data  # a new worker renders the same bytes
            assert preparer.worker_pid not in (None, pid)
        finally:
            await preparer.close()
        assert preparer.worker_pid is None


class BuggyFetcher(BadgeFetcher):
    """A fetcher with a bug nobody foresaw: it raises what no caller expects."""

    async def fetch(self, ref: str) -> bytes:
        raise KeyError("a bug")


async def test_a_badge_that_outlasts_its_budget_fails_as_a_timeout(
    hostile: HostileServer,
) -> None:
    # GIVEN a badge server that sends one byte a second, and requests allowed 30 s
    async with HttpClient() as http:
        fetcher = BadgeFetcher(http, sources=local_sources(Path(tempfile.gettempdir())),
                               coordinator_url=None, artifact_headers={},
                               max_bytes=DEFAULT_LIMITS.max_bytes, timeout_s=30)  # fmt: skip
        preparer = BadgePreparer(fetcher, width_dots=384, limits=DEFAULT_LIMITS, footer=True,
                                 in_sandbox=False, budget_s=10)  # fmt: skip
        # WHEN a job whose lease lasts 2 s is prepared (its budget: half of that)
        leased = JobTicket(
            "printer-a",
            "job-1",
            "lease-1",
            {"badge_pdf_ref": hostile.url + "/trickle.pdf"},
            lease_ttl_s=2.0,
        )
        assert preparer.budget_for(leased) == 1.0
        with pytest.raises(BadgeUnprintable) as unprintable:
            async with asyncio.timeout(FETCH_BOUND_S):
                await preparer.prepare(leased)
    # THEN it fails as a timeout within the budget, a transient reason
    assert unprintable.value.reason is FailureReason.FETCH_TIMEOUT
    assert "1 s budget" in unprintable.value.message
    assert not is_permanent(unprintable.value.reason)


async def test_an_unforeseen_fault_fails_the_job_as_internal(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with HttpClient() as http:
        fetcher = BuggyFetcher(http, sources=local_sources(), coordinator_url=None,
                               artifact_headers={}, max_bytes=DEFAULT_LIMITS.max_bytes)  # fmt: skip
        preparer = BadgePreparer(fetcher, width_dots=384, limits=DEFAULT_LIMITS, footer=True,
                                 in_sandbox=False)  # fmt: skip
        with caplog.at_level(logging.ERROR), pytest.raises(BadgeUnprintable) as unprintable:
            await preparer.prepare(ticket("file:///badge.pdf", "job-1"))

    assert unprintable.value.reason is FailureReason.INTERNAL
    assert "KeyError" in caplog.text  # the bug is in the log, in full, for whoever fixes it


async def test_a_badge_the_checks_refuse_fails_with_the_checks_reason(
    tmp_path: Path, core_font_ref: str
) -> None:
    async with HttpClient() as http:
        fetcher = BadgeFetcher(http, sources=local_sources(Path(tempfile.gettempdir())),
                               coordinator_url=None, artifact_headers={},
                               max_bytes=DEFAULT_LIMITS.max_bytes)  # fmt: skip
        preparer = BadgePreparer(fetcher, width_dots=384, limits=DEFAULT_LIMITS, footer=True,
                                 in_sandbox=True)  # fmt: skip
        try:
            with pytest.raises(BadgeUnprintable) as unprintable:
                await preparer.prepare(ticket(core_font_ref, "job-1"))
        finally:
            await preparer.close()

    assert unprintable.value.reason is FailureReason.FONT_NOT_EMBEDDED
    assert is_permanent(unprintable.value.reason)


class HungReadFetcher(BadgeFetcher):
    """A file read that does not return (a hung SD card or mount) until `released`."""

    released = threading.Event()

    async def fetch(self, ref: str) -> bytes:
        await badge_thread(self.released.wait)
        return b""


async def test_a_read_that_never_returns_is_reported_past_its_badge_s_budget() -> None:
    # GIVEN a badge whose read blocks its thread, with the shortest budget
    async with HttpClient() as http:
        fetcher = HungReadFetcher(
            http, sources=local_sources(), coordinator_url=None, artifact_headers={},
            max_bytes=DEFAULT_LIMITS.max_bytes,
        )  # fmt: skip
        preparer = BadgePreparer(fetcher, width_dots=384, limits=DEFAULT_LIMITS, footer=True,
                                 in_sandbox=False, budget_s=MIN_BUDGET_S)  # fmt: skip
        HungReadFetcher.released.clear()
        try:
            # WHEN its budget runs out: the job fails in time, as any slow badge does
            with pytest.raises(BadgeUnprintable) as unprintable:
                await preparer.prepare(ticket("file:///badge.pdf", "job-1"))
            assert unprintable.value.reason is FailureReason.FETCH_TIMEOUT

            # THEN the thread it left behind is past its badge's deadline, and grows so
            # (the agent's /healthz calls the lease loop stuck past a slack)
            first = preparer.overdue_s()
            assert first > 0

            async def growing() -> bool:
                return preparer.overdue_s() > first

            await wait_for(growing)
        finally:
            HungReadFetcher.released.set()

        # AND once the read returns, nothing is overdue
        async def cleared() -> bool:
            return preparer.overdue_s() == 0

        await wait_for(cleared)
