"""A loss found by bench/chaos.py (seed 90210), reproduced, and now fixed.

The agent used to confirm a badge `printed` when the printer had taken its
bytes and then answered a healthy DLE EOT status. A slow printer keeps taking
badges into its buffer faster than it prints them, so the agent ran ahead of
the paper; when the paper ran out (or the printer jammed or went offline) with
badges still in that buffer, the emulator lost them, as a real printer that
clears its buffer does, while the coordinator held them as `printed`.

Now the agent confirms a badge only when the printer answers the GS ( H
process ID request sent after it, which the printer does once the badge is on
paper; a fault before that makes the badge `uncertain`, and the coordinator
re-dispatches it (flagged possible_duplicate). This test keeps the scenario:
a slow printer, a badge in its buffer when the paper runs out.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.chaos.harness.checker import Checker
from tests.chaos.harness.kiosk import Submission
from tests.chaos.harness.run import (
    emulator_discards,
    fetch_jobs,
    jobs_finished,
    journals_quiet,
    upload_badge,
)
from tests.chaos.harness.venue import ChaosVenue

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]
PRINTER = "printer-a"
JOBS = 5


async def test_badges_in_a_slow_printers_buffer_survive_a_paper_out(
    tmp_path: Path,
) -> None:
    venue = ChaosVenue(tmp_path / "venue", (PRINTER,), coordinators=1)
    try:
        # Inside the try: a start that fails half-way must not leave its processes behind.
        await venue.start()
        # GIVEN a printer that takes 1.5 s per badge, and five badges for it
        await venue.set_speed(PRINTER, 1500)
        submissions = await submit(venue, await upload_badge(venue), JOBS)
        job_ids = {s.job_id for s in submissions if s.job_id is not None}
        # AND two have come out, and the printer is printing the next one
        await venue.wait_for(lambda: badge_in_the_printer(venue), "a badge in the printer")

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


async def badge_in_the_printer(venue: ChaosVenue) -> bool:
    status = await venue.get(venue.emulator_url(PRINTER) + "/status")
    return bool(status["printed"] >= 2 and status["printing"])


async def printer_idle(venue: ChaosVenue) -> bool:
    status = await venue.get(venue.emulator_url(PRINTER) + "/status")
    return status["queued"] == 0 and not status["printing"]
