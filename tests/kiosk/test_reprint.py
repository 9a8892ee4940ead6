"""A reprint is the deliberate second badge: asked for with a reason, logged, kept in
the outbox like a scan and delivered as the coordinator's reprint under a request id
of its own, never the scan's key; a lost answer does not make it two."""

from __future__ import annotations

import pytest

from badgeline.kiosk import Delivery, Kind, NotReprintable
from tests.kiosk.conftest import (
    MakeKiosk,
    PlayedPrinter,
    ThreadedCoordinator,
    closed_port,
    jobs_of,
    unique_attendee,
)
from tests.kiosk.proxy import AnswerDroppingProxy


def test_a_reprint_is_a_new_linked_job_under_its_own_key(
    coordinator: ThreadedCoordinator, printer: PlayedPrinter, make_kiosk: MakeKiosk,
    badge: bytes, caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    # GIVEN a scan that printed
    kiosk = make_kiosk(coordinator.url)
    attendee = unique_attendee()
    scan = kiosk.submit(attendee, badge, "printer-a")
    original = kiosk.wait(scan, 10, until=lambda s: s.delivery is Delivery.ACCEPTED).job_id
    assert printer.print_next() == original
    assert kiosk.wait(scan, 10).printed
    # WHEN the desk asks for a reprint, with its reason
    ticket = kiosk.reprint(scan, "badge smudged")
    # THEN the request is logged, and kept under a key that is not the scan's
    assert ticket.kind is Kind.REPRINT and ticket.reprint_of == original
    assert ticket.idempotency_key != scan.idempotency_key
    [logged] = [r for r in caplog.records if r.getMessage().startswith("reprint_requested")]
    assert "badge smudged" in logged.getMessage() and original in logged.getMessage()
    # AND it becomes the coordinator's reprint of that job: a new job, the desk's reason first
    reprinted = kiosk.wait(ticket, 10, until=lambda s: s.delivery is Delivery.ACCEPTED)
    job = kiosk.status(ticket).job
    assert job is not None and job["reprint_of"] == original
    assert job["idempotency_key"] == f"reprint:{original}:1"
    assert job["history"][0]["actor"] == "kiosk:kiosk-1"
    assert "badge smudged" in job["history"][0]["reason"]
    # AND it prints, and the original is as it was
    assert printer.print_next() == reprinted.job_id
    assert kiosk.wait(ticket, 10).printed
    assert {j["job_id"] for j in jobs_of(coordinator, attendee)} == {original, reprinted.job_id}
    assert kiosk.status(scan).job_state == "printed"


def test_a_reprint_whose_answer_was_lost_is_still_one_badge(
    coordinator: ThreadedCoordinator, printer: PlayedPrinter, make_kiosk: MakeKiosk,
    badge: bytes,
) -> None:  # fmt: skip
    proxy = AnswerDroppingProxy(coordinator.live.port)
    try:
        kiosk = make_kiosk(proxy.url)
        attendee = unique_attendee()
        scan = kiosk.submit(attendee, badge, "printer-a")
        kiosk.wait(scan, 10, until=lambda s: s.delivery is Delivery.ACCEPTED)
        printer.print_next()
        kiosk.wait(scan, 10)
        # GIVEN a link that loses the answer to the next reprint request
        proxy.drop_answer(b"POST /v1/jobs/job_")
        # WHEN the desk asks for one reprint
        ticket = kiosk.reprint(scan, "lost it")
        # THEN the kiosk asked again after the lost answer, and there is one reprint
        kiosk.wait(ticket, 10, until=lambda s: s.delivery is Delivery.ACCEPTED)
        assert proxy.dropped == [b"POST /v1/jobs/job_"]
        assert len(jobs_of(coordinator, attendee)) == 2
        kiosk.close()
    finally:
        proxy.close()


def test_a_reprint_of_a_job_still_waiting_is_refused_with_the_coordinator_s_reason(
    coordinator: ThreadedCoordinator, make_kiosk: MakeKiosk, badge: bytes
) -> None:
    kiosk = make_kiosk(coordinator.url)
    scan = kiosk.submit(unique_attendee(), badge, "printer-a")
    kiosk.wait(scan, 10, until=lambda s: s.delivery is Delivery.ACCEPTED)
    # WHEN a reprint is asked of a badge not yet printed
    status = kiosk.wait(kiosk.reprint(scan, "impatient"), 10)
    # THEN the reprint is refused, saying why, and the scan goes on as it was
    assert (status.delivery, status.error_code) == (Delivery.REFUSED, "validation_failed")
    assert "only a printed, failed, canceled or expired job can be reprinted" in (
        status.error_message or ""
    )


def test_there_is_nothing_to_reprint_before_the_scan_is_delivered(
    make_kiosk: MakeKiosk, badge: bytes
) -> None:
    with closed_port() as nobody_answers:
        kiosk = make_kiosk(f"http://127.0.0.1:{nobody_answers}")
        scan = kiosk.submit(unique_attendee(), badge, "printer-a")
        with pytest.raises(NotReprintable, match="not delivered yet"):
            kiosk.reprint(scan, "lost it")
        assert kiosk.undelivered == 1
