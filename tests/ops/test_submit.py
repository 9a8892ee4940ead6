"""`badgeline submit FILE.pdf --printer T --attendee ID [--wait]` (as lp): the PDF is
uploaded and checked, the job submitted and its id printed; --wait says how it ended.
Every refusal is one line naming what to fix, with a non-zero exit."""

from __future__ import annotations

import asyncio
from pathlib import Path

from badgeline.samples import core_font_badge_pdf, sample_badge_pdf
from tests.helpers import wait_for
from tests.ops.conftest import MakeVenue
from tests.ops.venue import Venue, alive


def badge(tmp_path: Path, pdf: bytes, name: str = "badge.pdf") -> str:
    path = tmp_path / name
    path.write_bytes(pdf)
    return str(path)


async def test_a_badge_is_uploaded_queued_and_its_id_printed(venue: Venue, tmp_path: Path) -> None:
    # GIVEN printer-a heartbeating and a badge PDF
    await alive(venue, "printer-a")
    pdf = badge(tmp_path, sample_badge_pdf("A-1001"))
    # WHEN the operator submits it
    result = await venue.cli_ok("submit", pdf, "--printer", "printer-a", "--attendee", "A-1001",
                                "--priority", "5")  # fmt: skip
    # THEN the first line is the job id, the second where it waits
    job_id, where = result.out.splitlines()
    assert where == "queued on printer-a, 0 job(s) ahead"
    job = await venue.job(job_id)
    assert (job["state"], job["attendee_id"], job["priority"]) == ("queued", "A-1001", 5)
    assert job["badge_pdf_ref"].startswith("artifact://")


async def test_wait_prints_the_outcome_once_the_badge_printed(venue: Venue, tmp_path: Path) -> None:
    # GIVEN an agent that prints what it is given
    await alive(venue, "printer-a", printing=True)
    pdf = badge(tmp_path, sample_badge_pdf("A-1002"))
    # WHEN the operator submits with --wait
    result = await venue.cli_ok("submit", pdf, "--printer", "printer-a", "--attendee", "A-1002",
                                "--wait", "--timeout", "30")  # fmt: skip
    # THEN it ends with the outcome, and the agent printed that job
    job_id, _, outcome = result.out.splitlines()
    assert outcome == "printed on printer-a"
    assert venue.agent("printer-a").printed == [job_id]


async def test_wait_gives_up_after_its_timeout_and_says_where_the_job_is(
    venue: Venue, tmp_path: Path
) -> None:
    # GIVEN a printer that heartbeats and prints nothing
    await alive(venue, "printer-a")
    pdf = badge(tmp_path, sample_badge_pdf("A-1003"))
    result = await venue.cli("submit", pdf, "--printer", "printer-a", "--attendee", "A-1003",
                             "--wait", "--timeout", "1")  # fmt: skip
    # THEN exit 1, the id on stdout, one line saying it still waits
    assert result.code == 1
    job_id = result.out.splitlines()[0]
    assert result.err.strip() == (
        f"badgeline submit: job {job_id} is still queued on printer-a after 1 s "
        f"(see badgeline job {job_id}; the job stays in line)"
    )


async def test_a_badge_that_breaks_a_rule_is_refused_with_the_reason(
    venue: Venue, tmp_path: Path
) -> None:
    await alive(venue, "printer-a")
    # GIVEN a badge in Helvetica, a font never embedded
    pdf = badge(tmp_path, core_font_badge_pdf(), "helvetica.pdf")
    result = await venue.cli("submit", pdf, "--printer", "printer-a", "--attendee", "A-1004")
    # THEN one line names the file, the coordinator's reason and what to fix; no job
    assert (result.code, result.out) == (1, "")
    (line,) = result.err.splitlines()
    assert line.startswith(f"badgeline submit: {pdf}: 422 badge_rejected: ")
    assert line.endswith("(reason: font_not_embedded)")
    assert "embed" in line
    assert (await venue.ops("GET", "/v1/jobs?attendee_id=A-1004"))["items"] == []


async def test_a_missing_file_or_one_that_is_no_pdf_is_bad_usage(
    venue: Venue, tmp_path: Path
) -> None:
    missing = str(tmp_path / "nope.pdf")
    result = await venue.cli("submit", missing, "--printer", "printer-a", "--attendee", "A-1005")
    assert (result.code, result.out) == (2, "")
    assert (
        result.err.strip() == f"badgeline submit: cannot read {missing}: No such file or directory"
    )
    html = badge(tmp_path, b"<html>sign in</html>", "login.pdf")
    result = await venue.cli("submit", html, "--printer", "printer-a", "--attendee", "A-1005")
    assert result.code == 2
    assert result.err.strip() == (f"badgeline submit: {html} is not a PDF (it does not start "
                                  "with %PDF-): give the badge as a PDF file")  # fmt: skip


async def test_an_unknown_or_rejecting_printer_is_named_by_its_flag(
    make_venue: MakeVenue, tmp_path: Path
) -> None:
    venue = await make_venue(known_printers=[])
    await alive(venue, "printer-a")
    pdf = badge(tmp_path, sample_badge_pdf("A-1006"))
    # WHEN the printer is mistyped THEN the line names --printer and the id
    typo = await venue.cli("submit", pdf, "--printer", "printer-al", "--attendee", "A-1006")
    assert typo.code == 1
    assert typo.err.startswith("badgeline submit: 422 unknown_printer: no agent has ever reported "
                               "printer-al")  # fmt: skip
    assert typo.err.strip().endswith("(--printer: unknown printer printer-al)")
    # WHEN the printer rejects new jobs THEN the line says so
    await venue.cli_ok("reject", "printer-a", "--reason", "toner")
    refused = await venue.cli("submit", pdf, "--printer", "printer-a", "--attendee", "A-1006")
    assert refused.code == 1
    assert refused.err.startswith("badgeline submit: 409 printer_rejecting: printer printer-a "
                                  "is rejecting new jobs")  # fmt: skip
    # AND a bad attendee id is named by --attendee
    bad = await venue.cli("submit", pdf, "--printer", "auto", "--attendee", "x")
    assert bad.err.strip() == (
        "badgeline submit: 422 validation_failed: --attendee: String should have at least 4 "
        "characters"
    )


async def test_the_same_idempotency_key_never_makes_a_second_badge(
    venue: Venue, tmp_path: Path
) -> None:
    await alive(venue, "printer-a")
    pdf = badge(tmp_path, sample_badge_pdf("A-1007"))
    command = ("submit", pdf, "--printer", "printer-a", "--attendee", "A-1007",
               "--idempotency-key", "desk-7-A-1007")  # fmt: skip
    first = (await venue.cli_ok(*command)).out.splitlines()
    again = (await venue.cli_ok(*command)).out.splitlines()
    assert again == [first[0], "already submitted: queued on printer-a"]
    assert len((await venue.ops("GET", "/v1/jobs?attendee_id=A-1007"))["items"]) == 1


async def test_wait_says_how_a_badge_that_did_not_print_ended(venue: Venue, tmp_path: Path) -> None:
    # GIVEN a submit waiting for its badge on a printer that prints nothing
    await alive(venue, "printer-a")
    pdf = badge(tmp_path, sample_badge_pdf("A-1008"))
    waiting = asyncio.create_task(venue.cli("submit", pdf, "--printer", "printer-a",
                                            "--attendee", "A-1008", "--wait"))  # fmt: skip
    jobs = await wait_for(lambda: _jobs_of(venue, "A-1008"), timeout_s=30)
    # WHEN the desk cancels it
    await venue.ops("POST", f"/v1/jobs/{jobs[0]['job_id']}/cancel")
    result = await waiting
    # THEN the wait ends with how, and exit 1: no badge came out
    assert result.code == 1 and result.err == ""
    assert result.out.splitlines()[-1] == "canceled (canceled by operator:ops)"


async def _jobs_of(venue: Venue, attendee_id: str) -> list[dict[str, object]]:
    answer = await venue.ops("GET", f"/v1/jobs?attendee_id={attendee_id}")
    jobs: list[dict[str, object]] = answer["items"]
    return jobs
