"""End-to-end fixtures: whole venues as real processes (coordinator with its
embedded Redis, printer emulators, agents) in tmp_path, through LocalVenue.

`fleet` is one three-printer venue shared by the tests that leave every process
running (it takes several seconds to start); `start_venue` gives a test a venue
of its own, for tests that kill or stop processes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from badgeline.localvenue import wait_until
from badgeline.samples import sample_badge_pdf
from tests.e2e.venue import E2EVenue

VenueFactory = Callable[..., E2EVenue]


def _started(venue: E2EVenue) -> E2EVenue:
    try:
        venue.start()
    except BaseException:
        venue.stop()
        raise
    return venue


@pytest.fixture
def start_venue(tmp_path: Path) -> Iterator[VenueFactory]:
    """`start_venue(**E2EVenue fields)` → a started venue in tmp_path, stopped after the test.

    Pass `start=False` to get it unstarted (to set it up around its ports first).
    """
    venues: list[E2EVenue] = []

    def make(start: bool = True, **options: Any) -> E2EVenue:
        venue = E2EVenue(tmp_path / f"venue-{len(venues)}", **options)
        venues.append(venue)
        return _started(venue) if start else venue

    yield make
    for venue in venues:
        venue.stop()


@pytest.fixture(scope="package")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[E2EVenue]:
    venue = _started(E2EVenue(tmp_path_factory.mktemp("fleet")))
    yield venue
    venue.stop()


@pytest.fixture
def healthy_fleet(fleet: E2EVenue) -> E2EVenue:
    """The shared fleet, checked to be as a test expects it: every printer healthy,
    not paused, with no fault and full speed (an earlier failing test may have left
    it otherwise)."""
    for printer_id in fleet.printer_ids:
        fleet.set_fault(printer_id, "none")
        fleet.set_speed(printer_id, 0)
        fleet.api("POST", f"/v1/printers/{printer_id}/resume")
    wait_until(fleet.all_printers_healthy, 30, "every printer of the fleet to be healthy")
    return fleet


@pytest.fixture(scope="package")
def fleet_badge(fleet: E2EVenue) -> tuple[bytes, str]:
    """One sample badge PDF, uploaded to the fleet's artifact store: (pdf, ref)."""
    pdf = sample_badge_pdf("A-E2E-0001", "Edsger Endtoend", "Process Level Ltd")
    return pdf, fleet.upload_badge(pdf)
