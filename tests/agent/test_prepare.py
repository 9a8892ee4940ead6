"""The render worker runs only while badges come: spawned by a badge, gone after an idle spell."""

from __future__ import annotations

import os
from pathlib import Path

import aiohttp

from badgeline.agent.badge import DEFAULT_LIMITS
from badgeline.agent.fetch import BadgeFetcher
from badgeline.agent.prepare import BadgePreparer, JobTicket
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
        fetcher = BadgeFetcher(session, coordinator_url=None, artifact_headers={},
                               max_bytes=DEFAULT_LIMITS.max_bytes, timeout_s=5,
                               retry_initial_s=0.01)  # fmt: skip
        preparer = BadgePreparer(fetcher, width_dots=384, limits=DEFAULT_LIMITS, footer=True,
                                 in_sandbox=True, worker_idle_s=0.3)  # fmt: skip
        await preparer.start()
        try:
            assert preparer.worker_pid is None  # an idle agent is one process
            first = await preparer.prepare(ticket(pdf.as_uri(), "job-1"))
            pid = preparer.worker_pid
            assert first.escpos and pid is not None

            async def worker_gone() -> bool:
                return preparer.worker_pid is None and not alive(pid)

            await wait_for(worker_gone, timeout_s=10)
            again = await preparer.prepare(ticket(pdf.as_uri(), "job-1"))
            assert again.escpos == first.escpos  # a new worker renders the same bytes
            assert preparer.worker_pid not in (None, pid)
        finally:
            await preparer.close()
        assert preparer.worker_pid is None
