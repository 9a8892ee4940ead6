"""The coordinator is down for 30 s while 200 scans arrive at a kiosk: every one is kept
when scanned, and once the coordinator is back on the same state every one prints
exactly once, counted at the emulators.

The kiosk is its own process (tests/kiosk/scanning_kiosk.py); the coordinator (with its
embedded Redis), three agents and their emulators are real processes (E2EVenue). The
coordinator is stopped with SIGTERM while the fleet is idle, and started again on the
same port and state directory.
"""

from __future__ import annotations

import time

import pytest

from tests.e2e.conftest import VenueFactory
from tests.e2e.kiosk_checks import assert_each_printed_once, outbox_counts
from tests.kiosk.scanning_kiosk import KioskProcess

PRINTERS = ("printer-a", "printer-b", "printer-c")
WARM_UP_SCANS = 5
SCANS = 200
DOWN_FOR_S = 30.0
SCAN_SPREAD_S = 25.0  # the 200 scans arrive within the outage
# The agents' back-off is capped at retry_max_s: once the coordinator is back they are
# leasing again within it (their default, 15 s, would be the agents' wait, not the kiosk's).
AGENT_RETRY_MAX_S = 2.0


@pytest.mark.slow  # the 30 s outage is the point
@pytest.mark.timeout(300)
def test_200_scans_kept_while_the_coordinator_is_down_for_30_s_each_print_once(
    start_venue: VenueFactory,
) -> None:
    agents = {"lease_wait_s": 2.0, "retry_max_s": AGENT_RETRY_MAX_S}
    venue = start_venue(printer_ids=PRINTERS, agent_settings=agents)
    outbox = venue.root / "kiosk" / "outbox.sqlite3"
    targets = ",".join(PRINTERS)
    kiosk = KioskProcess(outbox, venue.kiosk_token, [venue.url], venue.root / "logs" / "kiosk.log")
    kiosk.next("started")
    # GIVEN a kiosk whose first scans printed
    kiosk.send(f"scan 0 {WARM_UP_SCANS} 0 {targets}")
    kiosk.send("flush 30")
    assert kiosk.next("flushed") == {"flushed": True}
    assert_each_printed_once(venue, kiosk.kept(), set(), timeout_s=30)
    # WHEN the coordinator goes away, and 200 scans arrive while it is down
    venue.processes["coordinator"].stop(timeout_s=30)
    down_at = time.monotonic()
    kiosk.send(f"scan {WARM_UP_SCANS} {SCANS} {SCAN_SPREAD_S} {targets}")
    last = kiosk.next("kept", 60)
    while last["kept"] < WARM_UP_SCANS + SCANS - 1:
        last = kiosk.next("kept", 60)
    # THEN the kiosk kept every one of them, and delivered none
    assert time.monotonic() - down_at < DOWN_FOR_S, "the scans took longer than the outage"
    assert outbox_counts(outbox)["pending"] == SCANS
    # WHEN the coordinator comes back after 30 s, on the same port and state
    time.sleep(max(0.0, DOWN_FOR_S - (time.monotonic() - down_at)))
    venue.start_coordinator()
    back_at = time.monotonic()
    # THEN the kiosk delivers them all, and each scan comes out of a printer exactly once
    kiosk.send("flush 120")
    assert kiosk.next("flushed", 150) == {"flushed": True}
    delivered_s = time.monotonic() - back_at
    assert kiosk.finish() == 0
    kept = kiosk.kept()
    assert len(kept) == WARM_UP_SCANS + SCANS
    counts = assert_each_printed_once(venue, kept, set(), timeout_s=120)
    assert len(counts) == WARM_UP_SCANS + SCANS
    print(f"\ncoordinator back: 200 scans delivered in {delivered_s:.1f} s, all printed"
          f" {time.monotonic() - back_at:.1f} s after its return")  # fmt: skip
