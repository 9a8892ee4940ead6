"""A kiosk told to find its coordinator on mDNS (no URL given) delivers to the one its
venue advertises, and follows it when it moves, as agents do. The advert comes from
another process (`python -m badgeline.discovery advertise-coordinator`), on loopback."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator

import pytest

from badgeline.kiosk import Delivery
from tests.field.conftest import LOOPBACK, unique
from tests.kiosk.conftest import (
    MakeCoordinator,
    MakeKiosk,
    ThreadedCoordinator,
    jobs_of,
    unique_attendee,
)

# mDNS on loopback is one network for every test process: these run one at a time.
pytestmark = pytest.mark.xdist_group("mdns")


class Advert:
    def __init__(self, venue: str, port: int) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "badgeline.discovery", "--interface", LOOPBACK[0],
             "advertise-coordinator", "--venue", venue, "--port", str(port)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        self.read_line("ready")

    def read_line(self, expected: str) -> str:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith(expected):
                return line
        raise AssertionError(f"the advert exited before saying {expected!r}")

    def move(self, port: int) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(f"move {LOOPBACK[0]} {port}\n")
        self.process.stdin.flush()
        self.read_line("moved")

    def stop(self) -> None:
        self.process.kill()
        self.process.wait(10)
        for pipe in (self.process.stdin, self.process.stdout):
            with contextlib.suppress(OSError):
                pipe.close()  # type: ignore[union-attr]


@pytest.fixture
def advertise() -> Iterator[type[Advert]]:
    made: list[Advert] = []

    class Tracked(Advert):
        def __init__(self, venue: str, port: int) -> None:
            super().__init__(venue, port)
            made.append(self)

    yield Tracked
    for advert in made:
        advert.stop()


def test_a_kiosk_finds_its_venue_s_coordinator_on_mdns_and_follows_it_when_it_moves(
    coordinator: ThreadedCoordinator, make_coordinator: MakeCoordinator,
    make_kiosk: MakeKiosk, advertise: type[Advert], badge: bytes,
) -> None:  # fmt: skip
    # GIVEN the venue's coordinator advertised on mDNS, and a kiosk with no URL
    venue = unique("hall")
    advert = advertise(venue, coordinator.live.port)
    kiosk = make_kiosk((), discover=True, venue=venue, mdns_interfaces=LOOPBACK)
    # WHEN a scan comes THEN it is delivered there
    first = unique_attendee()
    kiosk.wait(kiosk.submit(first, badge, "printer-a"), 15,
               until=lambda s: s.delivery is Delivery.ACCEPTED)  # fmt: skip
    assert len(jobs_of(coordinator, first)) == 1
    # WHEN the coordinator moves (the spare laptop takes over) and the first one stops
    spare = make_coordinator()
    advert.move(spare.live.port)
    coordinator.stop()
    # THEN the next scan goes to where the advert says, once
    second = unique_attendee()
    kiosk.wait(kiosk.submit(second, badge, "printer-a"), 15,
               until=lambda s: s.delivery is Delivery.ACCEPTED)  # fmt: skip
    assert len(jobs_of(spare, second)) == 1
