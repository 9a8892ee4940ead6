"""A permanent refusal ends the scan, refused with the coordinator's reason, once; a
refusal for now (429 with Retry-After) holds delivery back, and the scan goes later."""

from __future__ import annotations

import pytest

from badgeline.kiosk import Delivery
from badgeline.samples import core_font_badge_pdf
from tests.kiosk.conftest import (
    MakeCoordinator,
    MakeKiosk,
    ThreadedCoordinator,
    jobs_of,
    unique_attendee,
)


def test_a_printer_the_coordinator_does_not_know_refuses_the_scan_for_good(
    coordinator: ThreadedCoordinator, make_kiosk: MakeKiosk, badge: bytes
) -> None:
    kiosk = make_kiosk(coordinator.url)
    attendee = unique_attendee()
    # WHEN a scan names a printer no agent ever reported (a typo of printer-a)
    ticket = kiosk.submit(attendee, badge, "printer-a1")
    # THEN it ends refused, with the coordinator's code and words, and no job was made
    status = kiosk.wait(ticket, 10)
    assert (status.delivery, status.error_code) == (Delivery.REFUSED, "unknown_printer")
    assert "printer-a1" in (status.error_message or "") and status.finished
    assert kiosk.flush(1) and kiosk.undelivered == 0
    assert jobs_of(coordinator, attendee) == []


def test_a_badge_that_breaks_a_badge_rule_is_refused_at_its_upload(
    coordinator: ThreadedCoordinator, make_kiosk: MakeKiosk
) -> None:
    kiosk = make_kiosk(coordinator.url)
    # WHEN a scan's PDF uses a font it does not embed
    ticket = kiosk.submit(unique_attendee(), core_font_badge_pdf(), "printer-a")
    # THEN the scan is refused with the badge rule the upload named
    status = kiosk.wait(ticket, 10)
    assert (status.delivery, status.error_code) == (Delivery.REFUSED, "badge_rejected")
    assert "font" in (status.error_message or "")


def test_a_token_the_coordinator_does_not_know_refuses_the_scan_instead_of_retrying(
    coordinator: ThreadedCoordinator, make_kiosk: MakeKiosk, badge: bytes
) -> None:
    kiosk = make_kiosk(coordinator.url, token="a-token-nobody-configured")
    status = kiosk.wait(kiosk.submit(unique_attendee(), badge, "printer-a"), 10)
    assert (status.delivery, status.error_code) == (Delivery.REFUSED, "unauthorized")


def test_over_its_rate_the_kiosk_waits_as_told_and_delivers_each_scan_once(
    make_coordinator: MakeCoordinator, make_kiosk: MakeKiosk, badge: bytes,
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    # GIVEN a coordinator that lets a kiosk make 4 calls at once, then 20 a second
    coordinator = make_coordinator(kiosk_rate_per_s=20, kiosk_burst=4)
    kiosk = make_kiosk(coordinator.url)
    # WHEN four scans come at once (two calls each: upload and submit)
    attendees = [unique_attendee() for _ in range(4)]
    for attendee in attendees:
        kiosk.submit(attendee, badge, "printer-a")
    # THEN the kiosk is told to wait, waits, and every scan becomes one job
    assert kiosk.flush(15)
    assert [len(jobs_of(coordinator, attendee)) for attendee in attendees] == [1] * 4
    postponed = [r for r in caplog.records if r.getMessage().startswith("delivery_postponed")]
    assert postponed and all("code=rate_limited" in r.getMessage() for r in postponed)
