"""The kiosk delivers each scan once, under the key it was given when it was kept,
through a coordinator restart, a replica going away, a kiosk restart and a lost
answer; it follows the job to its end and tells the integrator of each change."""

from __future__ import annotations

from badgeline.coordinator.config import CoordinatorSettings
from badgeline.coordinator.store.embedded import EmbeddedRedis
from badgeline.kiosk import Delivery, ScanStatus
from badgeline.localvenue import wait_until
from tests.kiosk.conftest import (
    MakeKiosk,
    PlayedPrinter,
    ThreadedCoordinator,
    artifact_ref,
    closed_port,
    jobs_of,
    unique_attendee,
)
from tests.kiosk.proxy import AnswerDroppingProxy


def test_a_scan_is_delivered_under_its_key_and_followed_until_it_printed(
    coordinator: ThreadedCoordinator, printer: PlayedPrinter, make_kiosk: MakeKiosk,
    badge: bytes,
) -> None:  # fmt: skip
    kiosk = make_kiosk(coordinator.url)
    seen: list[ScanStatus] = []
    kiosk.on_change(seen.append)
    # WHEN a scan is submitted
    attendee = unique_attendee()
    ticket = kiosk.submit(attendee, badge, "printer-a", priority=50)
    # THEN it becomes one job at the coordinator, with the ticket's key and the badge uploaded
    accepted = kiosk.wait(ticket, 10, until=lambda s: s.delivery is Delivery.ACCEPTED)
    [job] = jobs_of(coordinator, attendee)
    assert job["job_id"] == accepted.job_id and job["idempotency_key"] == ticket.idempotency_key
    assert (job["badge_pdf_ref"], job["priority"]) == (artifact_ref(badge), 50)
    # WHEN the printer prints it
    assert printer.print_next() == accepted.job_id
    # THEN the kiosk sees it printed, and told the callback each change in order
    done = kiosk.wait(ticket, 10)
    assert done.printed and done.finished and done.printer_id == "printer-a"
    wait_until(lambda: seen and seen[-1].printed, 5, "the callback to hear of the print")
    assert seen[0].delivery is Delivery.ACCEPTED
    states = [status.job_state for status in seen]
    assert states[-1] == "printed" and len(set(states)) == len(states), states
    # AND status() reads the job from the coordinator, its history included
    status = kiosk.status(ticket)
    assert status.job is not None and status.job["history"][-1]["to"] == "printed"
    assert kiosk.status(accepted.job_id).scan_id == ticket.scan_id


def test_an_answer_lost_after_the_coordinator_acted_is_retried_under_the_same_key(
    coordinator: ThreadedCoordinator, make_kiosk: MakeKiosk, badge: bytes,
) -> None:  # fmt: skip
    # GIVEN a link that loses the coordinator's answers to the next two submissions
    proxy = AnswerDroppingProxy(coordinator.live.port)
    proxy.drop_answer(b"POST /v1/jobs ", times=2)
    try:
        kiosk = make_kiosk(proxy.url)
        # WHEN a scan is submitted
        attendee = unique_attendee()
        ticket = kiosk.submit(attendee, badge, "printer-a")
        # THEN the kiosk sent it again after each lost answer, and it is still one job
        status = kiosk.wait(ticket, 10, until=lambda s: s.delivery is Delivery.ACCEPTED)
        assert proxy.dropped == [b"POST /v1/jobs "] * 2
        [job] = jobs_of(coordinator, attendee)
        assert job["job_id"] == status.job_id
        assert job["idempotency_key"] == ticket.idempotency_key
        kiosk.close()
    finally:
        proxy.close()


def test_scans_kept_while_the_coordinator_is_down_are_delivered_once_it_is_back(
    coordinator: ThreadedCoordinator, make_kiosk: MakeKiosk, badge: bytes,
) -> None:  # fmt: skip
    # GIVEN the coordinator down
    coordinator.stop()
    kiosk = make_kiosk(coordinator.url)
    # WHEN scans arrive
    attendees = [unique_attendee() for _ in range(5)]
    tickets = [kiosk.submit(attendee, badge, "printer-a") for attendee in attendees]
    # THEN each is kept, none delivered, and the kiosk says why
    wait_until(lambda: kiosk.last_delivery_error is not None, 5, "a failed delivery attempt")
    assert "coordinator_away" in (kiosk.last_delivery_error or "")
    assert kiosk.undelivered == 5
    assert [kiosk.status(t, refresh=False).delivery for t in tickets] == [Delivery.PENDING] * 5
    # WHEN it comes back on the same port and state
    coordinator.start()
    # THEN every scan is delivered, each as one job under its own key
    assert kiosk.flush(10)
    for attendee, ticket in zip(attendees, tickets, strict=True):
        [job] = jobs_of(coordinator, attendee)
        assert job["idempotency_key"] == ticket.idempotency_key
    assert kiosk.last_delivery_error is None


def test_a_new_kiosk_on_the_outbox_delivers_what_the_last_one_left(
    coordinator: ThreadedCoordinator, make_kiosk: MakeKiosk, badge: bytes,
) -> None:  # fmt: skip
    # GIVEN a kiosk that kept two scans while it could reach no coordinator, then stopped
    with closed_port() as nobody_answers:
        first = make_kiosk(f"http://127.0.0.1:{nobody_answers}")
        attendees = [unique_attendee(), unique_attendee()]
        tickets = [first.submit(attendee, badge, "printer-a") for attendee in attendees]
        first.close()
    assert all(jobs_of(coordinator, attendee) == [] for attendee in attendees)
    # WHEN a new kiosk opens the same outbox, and reaches the coordinator
    second = make_kiosk(coordinator.url)
    # THEN it delivers them, under the keys the first kiosk gave them
    assert second.flush(10)
    for attendee, ticket in zip(attendees, tickets, strict=True):
        [job] = jobs_of(coordinator, attendee)
        assert job["idempotency_key"] == ticket.idempotency_key
        assert second.status(ticket, refresh=False).job_id == job["job_id"]


def test_when_a_replica_cannot_be_reached_the_next_one_takes_the_scans(
    coordinator: ThreadedCoordinator, settings: CoordinatorSettings,
    redis_server: EmbeddedRedis, make_kiosk: MakeKiosk, badge: bytes,
) -> None:  # fmt: skip
    # GIVEN two replicas on one Redis, and a kiosk that knows both
    second = ThreadedCoordinator(settings, redis_server.url).start()
    try:
        kiosk = make_kiosk([coordinator.url, second.url])
        attendee = unique_attendee()
        kiosk.wait(kiosk.submit(attendee, badge, "printer-a"), 10,
                   until=lambda s: s.delivery is Delivery.ACCEPTED)  # fmt: skip
        # WHEN the first goes away
        coordinator.stop()
        # THEN the next scans go to the second, each once
        later = [unique_attendee() for _ in range(3)]
        for name in later:
            kiosk.submit(name, badge, "printer-a")
        assert kiosk.flush(10)
        for name in [attendee, *later]:
            assert len(jobs_of(second, name)) == 1
    finally:
        second.close()


def test_a_scan_for_a_target_that_cannot_take_it_now_lets_later_scans_go_first(
    coordinator: ThreadedCoordinator, make_kiosk: MakeKiosk, badge: bytes,
) -> None:  # fmt: skip
    kiosk = make_kiosk(coordinator.url)
    # GIVEN a scan for a pool with no healthy printer (503 no_printer_available)
    stuck = kiosk.submit(unique_attendee(), badge, "pool:hall-z")
    # WHEN a scan for a known printer follows
    attendee = unique_attendee()
    later = kiosk.submit(attendee, badge, "printer-a")
    # THEN the later one is delivered while the first waits for its pool, still pending
    kiosk.wait(later, 10, until=lambda s: s.delivery is Delivery.ACCEPTED)
    waiting = kiosk.status(stuck, refresh=False)
    assert (waiting.delivery, waiting.error_code) == (Delivery.PENDING, "no_printer_available")
    assert "hall-z" in (waiting.error_message or "")
    assert len(jobs_of(coordinator, attendee)) == 1
