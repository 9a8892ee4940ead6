"""A printer that goes offline: its agent says so, nothing is lost, and it prints
again once it is back. Real emulator fault, real agent probe and heartbeat."""

from __future__ import annotations

from typing import Any

from badgeline.localvenue import wait_until
from tests.e2e.venue import (
    E2EVenue,
    printed_on,
    prints_by_job,
    submitted_job_id,
    wait_until_printed,
    wait_until_state,
)

FAULTY = "printer-c"


def printer_view(venue: E2EVenue, printer_id: str) -> dict[str, Any]:
    printers = venue.api("GET", "/v1/printers")["items"]
    return next(p for p in printers if p["printer_id"] == printer_id)


def test_an_offline_printer_is_reported_unreachable_loses_nothing_and_prints_when_back(
    healthy_fleet: E2EVenue, fleet_badge: tuple[bytes, str]
) -> None:
    venue = healthy_fleet
    _, badge_ref = fleet_badge
    prints_on_faulty_before = len(printed_on(venue, FAULTY))

    # GIVEN printer-c switched offline (it takes connections, prints nothing, answers no status)
    venue.set_fault(FAULTY, "offline")

    # THEN its agent's heartbeat reports it unreachable and the coordinator marks it down
    def reported_unreachable() -> bool:
        view = printer_view(venue, FAULTY)
        return view["health"]["reachable"] is False and view["state"] in ("degraded", "dead")

    wait_until(reported_unreachable, 30, f"{FAULTY} to be reported unreachable")
    view = printer_view(venue, FAULTY)
    print(f"\n{FAULTY} offline: state {view['state']}, health {view['health']}")

    # WHEN a kiosk keeps sending badges for it
    during = [submitted_job_id(venue.submit(FAULTY, f"A-OFF-{n:04d}", badge_ref))
              for n in range(6)]  # fmt: skip

    # THEN nothing is lost: each comes out exactly once (on a peer), and none on printer-c
    wait_until_printed(venue, during, timeout_s=45)
    wait_until_state(venue, during, "printed", timeout_s=30)
    assert len(printed_on(venue, FAULTY)) == prints_on_faulty_before

    # WHEN the fault clears
    venue.set_fault(FAULTY, "none")

    def healthy_again() -> bool:
        view = printer_view(venue, FAULTY)
        return view["health"]["reachable"] is True and view["state"] == "healthy"

    wait_until(healthy_again, 30, f"{FAULTY} to be healthy again")

    # THEN it prints again: badges sent to it come out of printer-c, exactly once
    after = [submitted_job_id(venue.submit(FAULTY, f"A-BACK-{n:04d}", badge_ref))
             for n in range(3)]  # fmt: skip
    wait_until_printed(venue, after, timeout_s=30)
    assert {row["job_id"] for row in printed_on(venue, FAULTY)} >= set(after)
    wait_until_state(venue, after, "printed", timeout_s=30)
    counts = prints_by_job(venue)
    assert [counts[job_id] for job_id in during + after] == [1] * len(during + after)
