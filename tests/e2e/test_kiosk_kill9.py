"""kill -9 the kiosk while it delivers, again and again, and start it on the same
outbox: every scan it acknowledged prints exactly once, counted at the emulators.

The kiosk is its own process (tests/kiosk/scanning_kiosk.py) scanning faster than it
delivers (its replies come over a slow link), so each kill lands with scans kept and
not yet delivered, and at a random point of a delivery: between an upload and its job,
between the coordinator's acceptance and the outbox recording it. The coordinator,
agents and emulators are real processes (E2EVenue).
"""

from __future__ import annotations

import random
import time

import pytest

from badgeline.localvenue import wait_until
from tests.chaos.harness.proxy import ThreadedFaultProxy
from tests.e2e.conftest import VenueFactory
from tests.e2e.kiosk_checks import assert_each_printed_once, outbox_counts
from tests.kiosk.scanning_kiosk import KioskProcess

PRINTERS = ("printer-a", "printer-b")
KILLS = 5
SCANS_PER_LIFE = 40
SCAN_SPREAD_S = 0.0  # 40 scans at once: kept far faster than they are delivered
# The kiosk's link to the coordinator: each reply 50 ms late, so that a delivery (an
# upload and a job) takes 0.1 s at least and the kiosk always has scans left to deliver.
REPLY_DELAY_S = 0.05
SEED = 20240917


@pytest.mark.timeout(300)
def test_a_kiosk_killed_mid_delivery_and_restarted_prints_every_acknowledged_scan_once(
    start_venue: VenueFactory, request: pytest.FixtureRequest
) -> None:
    rng = random.Random(SEED)
    venue = start_venue(printer_ids=PRINTERS)
    outbox = venue.root / "kiosk" / "outbox.sqlite3"
    kept: dict[int, str] = {}
    unsure: set[int] = set()
    next_scan = 0

    link = ThreadedFaultProxy(venue.coordinator_port).start()
    request.addfinalizer(link.stop)
    link.delay_replies(REPLY_DELAY_S)

    def life() -> KioskProcess:
        kiosk = KioskProcess(outbox, venue.kiosk_token, [link.url],
                             venue.root / "logs" / "kiosk.log")  # fmt: skip
        kiosk.next("started")
        return kiosk

    # WHEN the kiosk is killed -9 while delivering, three times, each life scanning on
    for _ in range(KILLS):
        kiosk = life()
        delivered_before = outbox_counts(outbox)["accepted"]
        more = rng.randint(2, 12)
        kiosk.send(f"scan {next_scan} {SCANS_PER_LIFE} {SCAN_SPREAD_S} {','.join(PRINTERS)}")
        enough = delivered_before + more
        wait_until(lambda enough=enough: outbox_counts(outbox)["accepted"] >= enough, 60,
                   f"{more} deliveries of this life")  # fmt: skip
        time.sleep(rng.uniform(0, 0.05))
        kiosk.kill()
        left = outbox_counts(outbox)
        print(f"killed after {more}+ deliveries: {left['pending']} scans undelivered")
        assert left["pending"] > 0, "the kill landed after every scan was delivered"
        kept |= kiosk.kept()
        submitting = kiosk.submitting()
        unsure |= set(submitting) - set(kept)
        next_scan = max(submitting) + 1
    # AND a last life takes the rest of its scans, and delivers (over a quick link)
    link.delay_replies(0)
    kiosk = life()
    kiosk.send(f"scan {next_scan} 10 0 {','.join(PRINTERS)}")
    kiosk.send("flush 120")
    assert kiosk.next("flushed", 150) == {"flushed": True}
    assert kiosk.finish() == 0
    kept |= kiosk.kept()
    # THEN each acknowledged scan is one job under its key, and came out exactly once
    assert len(kept) >= KILLS * 2 + 10 and len(unsure) <= KILLS
    counts = assert_each_printed_once(venue, kept, unsure - set(kept), timeout_s=120)
    duplicates = (venue.root / "logs" / "kiosk.log").read_text().count('"duplicate": true')
    print(f"{len(kept)} scans kept, {len(unsure)} cut short by a kill, {len(counts)} printed;"
          f" {duplicates} answered as a duplicate (accepted before a kill,"
          " not yet recorded)")  # fmt: skip
    assert outbox_counts(outbox) == {"accepted": len(counts)}
