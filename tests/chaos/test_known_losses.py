"""Known loss, reproduced on purpose (found by bench/chaos.py, seed 90210).

The agent confirms a badge `printed` when the printer took its bytes and then
answered a healthy DLE EOT status: ESC/POS has nothing better. A slow printer
keeps taking badges into its buffer faster than it prints them, so the agent
runs ahead of the paper. When the paper runs out (or the printer jams or goes
offline) with badges still in that buffer, the emulator ruins them, as a real
printer that loses its buffer would: they never come out, yet the coordinator
holds them as `printed` and nobody is told. The checker counts them as lost.

This test asserts the invariant (nothing accepted is lost) and is expected to
fail until the agent stops confirming badges the printer has not finished
(e.g. a print-completion handshake such as Epson's GS ( H process ID response,
and a bounded buffer in the emulator). `strict=True`: when it starts passing,
remove the marker.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from badgeline.chaos.checker import Checker
from badgeline.chaos.kiosk import Submission
from badgeline.chaos.run import (
    emulator_discards,
    fetch_jobs,
    jobs_finished,
    journals_quiet,
    upload_badge,
)
from badgeline.chaos.venue import ChaosVenue

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]
PRINTER = "printer-a"
JOBS = 5


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="known loss: badges confirmed while still in the printer's buffer",
)
async def test_badges_confirmed_while_still_in_a_slow_printer_survive_a_paper_out(
    tmp_path: Path,
) -> None:
    venue = ChaosVenue(tmp_path / "venue", (PRINTER,), coordinators=1)
    await venue.start()
    try:
        # GIVEN a printer that takes 1.5 s per badge, and five badges for it
        await venue.set_speed(PRINTER, 1500)
        submissions = await submit(venue, await upload_badge(venue), JOBS)
        job_ids = {s.job_id for s in submissions if s.job_id is not None}
        # AND the agent has confirmed more badges than have come out
        await venue.wait_for(lambda: agent_ahead_of_paper(venue, job_ids), "the agent to run ahead")

        # WHEN the paper runs out, and is put back once the printer has stopped
        await venue.set_fault(PRINTER, "paper_out")
        await venue.wait_for(lambda: printer_idle(venue), "the printer to stop")
        await venue.set_fault(PRINTER, "none")
        await venue.set_speed(PRINTER, 0)
        await venue.wait_for(jobs_finished(venue, job_ids), "every job to finish", 90)
        await venue.wait_for(lambda: journals_quiet(venue), "the agent's journal to settle", 60)

        # THEN every accepted badge came out (or was failed: the kiosk would be told)
        jobs = await fetch_jobs(venue, sorted(job_ids))
        rows = await venue.printed_rows()
        discards = emulator_discards(venue.root / "logs")
        report = Checker(submissions, jobs, rows, [], {PRINTER: "coordinator-1"}, discards).check(
            time.time()
        )
        print(report.text())
    finally:
        await venue.stop()
    assert report.violations()["lost"] == 0, report.text()


async def submit(venue: ChaosVenue, ref: str, count: int) -> list[Submission]:
    submissions = []
    headers = {"Authorization": f"Bearer {venue.kiosk_token}"}
    for n in range(count):
        body = {
            "attendee_id": f"att-known-{n}",
            "badge_pdf_ref": ref,
            "printer_target": PRINTER,
            "priority": 100,
            "idempotency_key": f"known-loss-{n:04d}-{time.time_ns()}",
        }
        async with venue.session.post(
            venue.replicas[0].url + "/v1/jobs", json=body, headers=headers
        ) as answer:
            assert answer.status == 201, await answer.text()
            submissions.append(
                Submission(0, body, job_id=(await answer.json())["job_id"], status=201)
            )
    return submissions


async def agent_ahead_of_paper(venue: ChaosVenue, job_ids: set[str]) -> bool:
    jobs = await fetch_jobs(venue, sorted(job_ids))
    confirmed = sum(1 for job in jobs.values() if job["state"] == "printed")
    return confirmed >= 3 and len(await venue.printed_rows()) < confirmed


async def printer_idle(venue: ChaosVenue) -> bool:
    status = await venue.get(venue.emulator_url(PRINTER) + "/status")
    return status["queued"] == 0 and not status["printing"]
