"""Process-level failover tests: a whole venue as real processes (coordinator with
its Redis, printer emulators, agents), faults injected where they happen in a
hall (a jammed printer, a Pi that loses power, a network drop), and every badge
counted where it comes out: at the emulators' `GET /printed`.

Each test starts its own venue (about 15 s on two cores: three agents import and
spawn their render sandboxes) and waits on conditions with timeouts, never on
sleeps, so a slow machine makes a test slower, not red.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from badgeline.localvenue import LocalVenue, stop_together
from badgeline.samples import sample_badge_pdf
from tests.chaos.harness.proxy import ThreadedFaultProxy

VenueFactory = Callable[..., LocalVenue]


def coordinator_config(**settings: Any) -> dict[str, Any]:
    """A venue name of its own: two venues on one machine never share one."""
    return {"venue": "fo" + secrets.token_hex(5), "ack_grace_s": 3.0, **settings}


@pytest.fixture
def make_venue(tmp_path: Path) -> Iterator[VenueFactory]:
    """A venue (`LocalVenue` keyword arguments, `coordinator=` settings for the
    coordinator), started unless `start=False` (to put relays in its paths first);
    everything it started is stopped at the end of the test."""
    venues: list[LocalVenue] = []

    def make(
        coordinator: dict[str, Any] | None = None, start: bool = True, **options: Any
    ) -> LocalVenue:
        root = tmp_path / f"venue-{len(venues) + 1}"
        venue = LocalVenue(
            root, extra_coordinator_config=coordinator_config(**(coordinator or {})), **options
        )
        venues.append(venue)
        if start:
            venue.start()
        return venue

    yield make
    for venue in venues:
        stop_quickly(venue)


def stop_quickly(venue: LocalVenue) -> None:
    """Agents stop as usual (all at once); coordinators are killed: a graceful stop
    waits out the lease long-polls of agents already gone (up to `lease_max_wait_s`)."""
    stop_together([p for name, p in venue.processes.items() if name.startswith("agent")])
    for name, process in venue.processes.items():
        if name.startswith("coordinator"):
            process.kill()
    venue.stop()


@pytest.fixture
def relays() -> Iterator[Callable[[int], ThreadedFaultProxy]]:
    started: list[ThreadedFaultProxy] = []

    def relay(target_port: int) -> ThreadedFaultProxy:
        started.append(ThreadedFaultProxy(target_port).start())
        return started[-1]

    yield relay
    for each in started:
        each.stop()


@pytest.fixture(scope="session")
def badge_pdf() -> bytes:
    return sample_badge_pdf("A-2001", "Grace Hopper", "Compiler Works")
