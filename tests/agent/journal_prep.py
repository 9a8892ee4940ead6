"""Leave an agent's journal the way a crash at a chosen moment would have left it.

The coordinator side is real: the job is leased (and granted) through the
agent API with the agent's own client, exactly as the agent would have done
before it died. Only the agent process is missing.
"""

from __future__ import annotations

from dataclasses import dataclass

from badgeline.agent.client import CoordinatorClient
from badgeline.agent.config import AgentSettings
from badgeline.agent.journal import Journal, JournalSettings
from badgeline.agent.printers import NetworkLink
from badgeline.agent.printers.connection import EmulatorConnection
from badgeline.badge import badge_to_escpos
from badgeline.protocol.models import LeasedJob


@dataclass(frozen=True)
class CrashedJob:
    job_id: str
    lease_id: str
    fence: int | None


async def lease_one(settings: AgentSettings) -> LeasedJob:
    """Lease the next job of the settings' printer through the real agent API."""
    async with _client(settings) as client:
        jobs = await client.lease(wait_s=2, max_jobs=1)
    assert len(jobs) == 1, jobs
    return jobs[0]


async def crash_after_lease(settings: AgentSettings) -> CrashedJob:
    """Leased and journaled, never granted: the power went before the start request."""
    job = await lease_one(settings)
    async with await _journal(settings) as journal:
        await journal.record_lease(job.job_id, job.lease_id, job.job)
    return CrashedJob(job.job_id, job.lease_id, None)


async def crash_after_grant(settings: AgentSettings) -> CrashedJob:
    """Granted and the grant journaled; the power went before the print's result."""
    job = await lease_one(settings)
    async with _client(settings) as client:
        decision = await client.start(job.job_id, job.lease_id)
    assert decision.granted and decision.fence is not None, decision
    async with await _journal(settings) as journal:
        await journal.record_lease(job.job_id, job.lease_id, job.job)
        await journal.record_grant(job.job_id, job.lease_id, decision.fence)
    return CrashedJob(job.job_id, job.lease_id, decision.fence)


async def crash_after_print(settings: AgentSettings, badge_pdf: bytes) -> CrashedJob:
    """Printed (the badge really came out) and journaled, but never acked."""
    job = await lease_one(settings)
    async with _client(settings) as client:
        decision = await client.start(job.job_id, job.lease_id)
    assert decision.granted and decision.fence is not None, decision
    async with await _journal(settings) as journal:
        await journal.record_lease(job.job_id, job.lease_id, job.job)
        await journal.record_grant(job.job_id, job.lease_id, decision.fence)
        escpos = badge_to_escpos(badge_pdf, settings.effective_width_dots, job.job_id)
        _print_on(settings, escpos)
        await journal.record_printed(job.job_id, job.lease_id)
    return CrashedJob(job.job_id, job.lease_id, decision.fence)


def _print_on(settings: AgentSettings, escpos: bytes) -> None:
    assert isinstance(settings.printer, EmulatorConnection)
    link = NetworkLink(settings.printer)
    try:
        link.write(escpos)
    finally:
        link.close()


def _client(settings: AgentSettings) -> CoordinatorClient:
    assert settings.coordinator_url is not None
    return CoordinatorClient(
        settings.coordinator_url, settings.printer_id, settings.token.get_secret_value()
    )


async def _journal(settings: AgentSettings) -> Journal:
    return await Journal.open(JournalSettings(path=settings.journal_path))
