"""Printer health as the agents report it: a degraded printer keeps its queue, and
with every printer dead the work waits in the venue's holding queue."""

from __future__ import annotations

import pytest

from badgeline.localvenue import HttpStatusError, LocalVenue
from tests.failover.checks import (
    automatic_decisions,
    check_printed_once,
    log_events,
    printed_at,
    printer_state,
    submit_many,
    wait_all_printed,
    wait_for,
    wait_for_decision,
)
from tests.failover.conftest import VenueFactory


def jam(venue: LocalVenue, printer_id: str) -> None:
    venue.set_fault(printer_id, "jam")
    wait_for(lambda: printer_state(venue, printer_id) == "dead", 10, f"{printer_id} dead", venue)


def test_paper_low_degrades_a_printer_it_prints_its_queue_but_gets_no_auto_jobs(
    make_venue: VenueFactory, badge_pdf: bytes
) -> None:
    venue = make_venue()
    ref = venue.upload_badge(badge_pdf)
    # printer-a's queue, held by a pause while its paper runs low.
    venue.api("POST", "/v1/printers/printer-a/pause", {})
    queued = submit_many(venue, "printer-a", ref, 6, "queued")
    venue.set_fault("printer-a", "paper_low")
    wait_for(lambda: printer_state(venue, "printer-a") == "degraded", 10, "degraded", venue)

    auto = submit_many(venue, "auto", ref, 12, "auto")
    named = submit_many(venue, "printer-a", ref, 2, "named")
    venue.api("POST", "/v1/printers/printer-a/resume")
    wait_all_printed(venue, queued + auto + named)

    jobs = check_printed_once(venue, queued + auto + named)
    out = printed_at(venue)
    assert sorted(out["printer-a"], key=str) == sorted(queued + named)
    assert {jobs[j]["printer_id"] for j in auto} == {"printer-b", "printer-c"}
    assert not automatic_decisions(venue, "printer-a"), "a degraded printer was failed over"
    assert printer_state(venue, "printer-a") == "degraded"


def test_with_every_printer_dead_jobs_park_then_print_once_when_one_recovers(
    make_venue: VenueFactory, badge_pdf: bytes
) -> None:
    venue = make_venue()
    ref = venue.upload_badge(badge_pdf)
    venue.api("POST", "/v1/printers/printer-a/pause", {})
    held = submit_many(venue, "printer-a", ref, 6, "held")
    for printer_id in ("printer-b", "printer-c", "printer-a"):  # printer-a, with a queue, last
        jam(venue, printer_id)

    decision = wait_for_decision(venue, "printer-a")
    assert sorted(decision["parked_job_ids"]) == sorted(held), decision
    assert not decision["drained_job_ids"]
    late = submit_many(venue, "printer-b", ref, 2, "late")
    assert {venue.job(j)["state"] for j in held + late} == {"parked"}
    with pytest.raises(HttpStatusError) as refused:
        venue.submit("auto", "att-auto", ref)
    assert refused.value.status == 503
    assert refused.value.body["error"]["code"] == "no_printer_available"
    alerts = log_events(venue, "coordinator", "no_healthy_target")
    assert [a["printer_id"] for a in alerts] == ["printer-a"]
    assert {e["job_id"] for e in log_events(venue, "coordinator", "job_parked")} >= set(held)
    assert not venue.printed_rows()

    # printer-c comes back: fault cleared, then three healthy heartbeats.
    venue.set_fault("printer-c", "none")
    wait_all_printed(venue, held + late)

    jobs = check_printed_once(venue, held + late)
    assert sorted(printed_at(venue)["printer-c"], key=str) == sorted(held + late)
    for job in jobs.values():
        reasons = [entry["reason"] for entry in job["history"]]
        assert any(r.startswith("unparked: printer-c") for r in reasons), job["history"]
