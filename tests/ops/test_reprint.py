"""Reprint: a new job linked to the original with its own derived key, the
reason and the operator first in its history; the original never changes."""

from __future__ import annotations

from tests.conftest import KIOSK_TOKEN, OTHER_KIOSK_TOKEN, auth
from tests.ops.conftest import MakeVenue
from tests.ops.venue import Venue


async def test_a_reprint_is_a_new_linked_job_and_the_original_is_untouched(venue: Venue) -> None:
    # GIVEN a printed badge
    original_id = await venue.printed_job()
    before = await venue.job(original_id)
    # WHEN the operator reprints it twice, with reasons
    first = await venue.cli_ok("reprint", original_id, "--reason", "badge lost", "--json")
    second = await venue.cli_ok("reprint", original_id, "--reason", "name misspelt")
    # THEN each is a new job linked to the original, under its own derived key
    reprint = first.json()
    assert reprint["job_id"] != original_id and reprint["reprint_of"] == original_id
    assert reprint["idempotency_key"] == f"reprint:{original_id}:1"
    assert (reprint["attendee_id"], reprint["badge_pdf_ref"]) == (
        before["attendee_id"], before["badge_pdf_ref"])  # fmt: skip
    assert reprint["state"] == "queued" and reprint["priority"] == 0
    assert f"reprint:{original_id}:2" in second.out
    # AND its history starts with who asked and why
    request, accepted = reprint["history"][0], reprint["history"][1]
    assert request["actor"] == "operator:ops" and "badge lost" in request["reason"]
    assert original_id in request["reason"]
    assert accepted["reason"].startswith("accepted") and request["at"] <= accepted["at"]
    # AND the original's record is exactly as it was
    assert await venue.job(original_id) == before
    # AND the reprint prints like any job, and the attendee's list shows all three
    assert await venue.agent("printer-a").print_next() == reprint["job_id"]
    jobs = await venue.cli_ok("jobs", "--attendee", before["attendee_id"])
    assert original_id in jobs.out and reprint["job_id"] in jobs.out


async def test_a_reprint_can_go_to_another_printer(venue: Venue) -> None:
    original_id = await venue.printed_job()
    await venue.agent("printer-b").heartbeat()
    body = {"reason": "printer-a is slow", "printer_target": "printer-b"}
    reprint = await venue.ops("POST", f"/v1/jobs/{original_id}/reprint", body)
    assert reprint["printer_id"] == "printer-b" and reprint["printer_target"] == "printer-b"


async def test_an_unfinished_job_is_not_reprinted(venue: Venue) -> None:
    # GIVEN a job still waiting in its queue
    (job_id,) = await venue.submit("printer-a")
    # WHEN the operator tries to reprint it
    result = await venue.cli("reprint", job_id, "--reason", "impatient")
    # THEN it is refused in one line, and no job was created
    assert result.code == 1 and result.out == ""
    assert result.err.strip().startswith("badgeline reprint: 422 validation_failed:")
    assert len(result.err.strip().splitlines()) == 1
    attendee = (await venue.job(job_id))["attendee_id"]
    assert len((await venue.ops("GET", f"/v1/jobs?attendee_id={attendee}"))["items"]) == 1


async def test_a_kiosk_reprints_its_own_job_once_per_request_id(venue: Venue) -> None:
    # GIVEN a badge kiosk-1 submitted and that printed
    original_id = await venue.printed_job()
    body = {"reason": "badge smudged", "request_id": "desk-reprint-0001"}
    # WHEN another kiosk asks for its reprint
    refused = await venue.api("POST", f"/v1/jobs/{original_id}/reprint",
                              auth(OTHER_KIOSK_TOKEN), body, status=404)  # fmt: skip
    # THEN it is the unknown-job answer, and nothing was made
    assert refused["error"]["code"] == "not_found"
    attendee = (await venue.job(original_id))["attendee_id"]
    assert len((await venue.ops("GET", f"/v1/jobs?attendee_id={attendee}"))["items"]) == 1
    # WHEN kiosk-1 asks for it, and again with the same request_id (a lost answer)
    first = await venue.api("POST", f"/v1/jobs/{original_id}/reprint", auth(KIOSK_TOKEN),
                            body, status=201)  # fmt: skip
    again = await venue.api("POST", f"/v1/jobs/{original_id}/reprint", auth(KIOSK_TOKEN),
                            body, status=200)  # fmt: skip
    # THEN one reprint was made under its own key, the desk's request first in its history
    assert again["job_id"] == first["job_id"] and first["reprint_of"] == original_id
    assert first["idempotency_key"] == f"reprint:{original_id}:1"
    assert first["history"][0]["actor"] == "kiosk:kiosk-1"
    assert "badge smudged" in first["history"][0]["reason"]
    # AND kiosk-1 sees it among the attendee's jobs
    mine = await venue.api("GET", f"/v1/jobs?attendee_id={attendee}", auth(KIOSK_TOKEN))
    assert {job["job_id"] for job in mine["items"]} == {original_id, first["job_id"]}


async def test_reprint_needs_a_reason_and_a_known_job(venue: Venue) -> None:
    original_id = await venue.printed_job()
    await venue.ops("POST", f"/v1/jobs/{original_id}/reprint", {}, status=422)
    missing = await venue.cli("reprint", "job_0000000000000000", "--reason", "x")
    assert missing.code == 1 and "404 not_found" in missing.err


async def test_a_mistyped_target_printer_is_refused_and_nothing_is_queued(venue: Venue) -> None:
    # GIVEN a printed badge
    original_id = await venue.printed_job()
    # WHEN the operator sends its reprint to printer-a1 meaning printer-a
    typo = await venue.cli("reprint", original_id, "--reason", "lost", "--target", "printer-a1")
    # THEN it is refused with the known printers, and no reprint was made
    assert typo.code == 2
    assert "printer-a1: this coordinator knows no such printer" in typo.err
    assert "known: printer-a" in typo.err
    jobs = await venue.cli_ok("jobs", "--attendee", (await venue.job(original_id))["attendee_id"])
    assert original_id in jobs.out and len(jobs.out.strip().splitlines()) == 2  # header + it


async def test_a_failed_job_reprinted_at_the_desk_is_not_redriven_too(
    make_venue: MakeVenue,
) -> None:
    # GIVEN a job that failed for good (dead-lettered), reprinted for the attendee
    venue = await make_venue(max_attempts=1)
    agent = venue.agent("printer-a")
    await agent.heartbeat()
    (job_id,) = await venue.submit("printer-a")
    leased = (await agent.lease())[0]
    await agent.start(leased)
    await agent.ack(leased, "failed", error="paper jam")
    assert (await venue.job(job_id))["state"] == "failed"
    reprint = await venue.ops("POST", f"/v1/jobs/{job_id}/reprint", {"reason": "at the desk"})
    # WHEN the operator re-drives the stragglers (the whole dead-letter list)
    results = (await venue.ops("POST", "/v1/dead-letters/redrive", {}))["results"]
    # THEN the original is not put back in line: the reprint is its badge
    assert results == [{"job_id": job_id, "outcome": "suppressed", "detail": reprint["job_id"]}]
    assert (await venue.job(job_id))["state"] == "canceled"
    assert await agent.print_next() == reprint["job_id"]
    assert await agent.lease() == []
