"""The kiosk learns its jobs' states from the coordinator's job event stream: each
change once, in order, to the outbox and the callbacks, with no polling while the
stream is up; it resumes after a dropped stream, a replica that stops and its own
restart from the id it kept, misses nothing, and starts over (reading its open jobs
once) when that id is gone. Polling is the fallback while the stream is down."""

from __future__ import annotations

import contextlib
import logging
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from badgeline.coordinator.store.keys import VenueKeys
from badgeline.kiosk import Delivery, Kiosk, ScanStatus, ScanTicket
from badgeline.localvenue import wait_until
from tests.kiosk.conftest import (
    MakeCoordinator,
    MakeKiosk,
    PlayedPrinter,
    ThreadedCoordinator,
    unique_attendee,
)
from tests.kiosk.proxy import HttpHop

ALL_THE_WAY = ["queued", "leased", "printing", "printed"]
# A poll interval no test outlasts: a state these kiosks learn came from the stream.
NO_POLLING = {"poll_interval_s": 30.0}


@pytest.fixture
def hop(coordinator: ThreadedCoordinator) -> Iterator[HttpHop]:
    hop = HttpHop(coordinator.live.port)
    yield hop
    hop.close()


@pytest.fixture(autouse=True)
def kiosk_log(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG, logger="badgeline.kiosk")
    return caplog


def logged(caplog: pytest.LogCaptureFixture, event: str) -> list[str]:
    return [m for r in list(caplog.records) if (m := r.getMessage()).startswith(event + " ")]


def stream_opened(caplog: pytest.LogCaptureFixture, times: int = 1) -> None:
    wait_until(lambda: len(logged(caplog, "event_stream_opened")) >= times, 10,
               f"the kiosk's event stream to open ({times})")  # fmt: skip


def outbox_read(path: Path, query: str) -> list[tuple[object, ...]]:
    """The outbox as another process reads it, while the kiosk holds it."""
    with contextlib.closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)) as db:
        return db.execute(query).fetchall()


def stored_event_id(kiosk: Kiosk) -> object:
    rows = outbox_read(kiosk.settings.outbox_path, "SELECT last_event_id FROM event_position")
    return rows[0][0] if rows else None


def every_event_seen(kiosk: Kiosk) -> bool:
    """Each job of the outbox has had an event (or a read) say when it entered its state."""
    rows = outbox_read(kiosk.settings.outbox_path,
                       "SELECT job_state_at_ms FROM scans WHERE delivery = 'accepted'")  # fmt: skip
    return bool(rows) and all(at is not None for (at,) in rows)


def venue_event_ids(coordinator: ThreadedCoordinator) -> list[str]:
    events = VenueKeys(coordinator.live.settings.venue).events
    return [i.decode() for i, _ in coordinator.run(coordinator.redis.xrange(events))]


def states(seen: list[ScanStatus], scan_id: str) -> list[str | None]:
    return [s.job_state for s in list(seen) if s.scan_id == scan_id]


def accepted(kiosk: Kiosk, ticket: ScanTicket) -> ScanStatus:
    return kiosk.wait(ticket, 10, until=lambda s: s.delivery is Delivery.ACCEPTED)


def test_each_change_comes_from_the_stream_once_in_order_and_nothing_is_polled(
    coordinator: ThreadedCoordinator, printer: PlayedPrinter, make_kiosk: MakeKiosk,
    hop: HttpHop, badge: bytes, kiosk_log: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    # GIVEN a kiosk that would poll every 50 ms, with its event stream open
    kiosk = make_kiosk(hop.url)
    seen: list[ScanStatus] = []
    kiosk.on_change(seen.append)
    stream_opened(kiosk_log)
    # WHEN a scan is delivered and printed, lease, start and ack one after the other
    ticket = kiosk.submit(unique_attendee(), badge, "printer-a")
    job_id = accepted(kiosk, ticket).job_id
    assert printer.print_next() == job_id
    # THEN the callback heard every change, once each, in order, though they came
    # faster than a poll could tell them apart
    wait_until(lambda: states(seen, ticket.scan_id)[-1:] == ["printed"], 10, "printed")
    assert states(seen, ticket.scan_id) == ALL_THE_WAY
    assert all(s.delivery is Delivery.ACCEPTED for s in seen)
    # AND the outbox holds the job's state and where the kiosk is in the stream
    assert kiosk.status(ticket, refresh=False).job_state == "printed"
    wait_until(lambda: stored_event_id(kiosk) == venue_event_ids(coordinator)[-1], 5,
               "the stream's position kept in the outbox")  # fmt: skip
    # AND the kiosk never read the job's state (one stream, no GET /v1/jobs/{id})
    assert hop.calls("GET", "/v1/jobs/") == []
    assert len(hop.calls("GET", "/v1/events")) == 1


def test_events_that_come_before_the_submission_is_answered_are_not_lost(
    coordinator: ThreadedCoordinator, printer: PlayedPrinter, make_kiosk: MakeKiosk,
    hop: HttpHop, badge: bytes, kiosk_log: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    kiosk = make_kiosk(hop.url, **NO_POLLING)
    seen: list[ScanStatus] = []
    kiosk.on_change(seen.append)
    stream_opened(kiosk_log)
    # GIVEN a submission whose answer is slow to come back
    hop.hold_answer("POST", "/v1/jobs")
    attendee = unique_attendee()
    ticket = kiosk.submit(attendee, badge, "printer-a")
    # WHEN its job is queued, leased and started before the kiosk hears the answer
    leased = printer.lease()
    printer.start(leased)
    wait_until(lambda: len(logged(kiosk_log, "job_event_held")) == 3, 10,
               "the job's three events on the stream, before the answer")  # fmt: skip
    assert kiosk.status(ticket, refresh=False).delivery is Delivery.PENDING
    # THEN once the answer comes, the kiosk has each of those changes, in order
    hop.released.set()
    kiosk.wait(ticket, 10, until=lambda s: s.job_state == "printing")
    printer.ack(leased)
    assert kiosk.wait(ticket, 10).printed
    wait_until(lambda: states(seen, ticket.scan_id)[-1:] == ["printed"], 10, "printed")
    assert states(seen, ticket.scan_id) == ALL_THE_WAY
    assert hop.calls("GET", "/v1/jobs/") == []


def test_a_dropped_stream_resumes_from_its_last_id_and_misses_nothing(
    coordinator: ThreadedCoordinator, printer: PlayedPrinter, make_kiosk: MakeKiosk,
    hop: HttpHop, badge: bytes, kiosk_log: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    kiosk = make_kiosk(hop.url, **NO_POLLING)
    seen: list[ScanStatus] = []
    kiosk.on_change(seen.append)
    stream_opened(kiosk_log)
    ticket = kiosk.submit(unique_attendee(), badge, "printer-a")
    accepted(kiosk, ticket)
    wait_until(lambda: every_event_seen(kiosk), 10, "the job's queued event")
    [queued_id] = venue_event_ids(coordinator)
    # WHEN the stream's connection is cut, and the job moves on while it is down
    hop.refuse_streams()
    hop.cut_streams()
    wait_until(lambda: logged(kiosk_log, "event_stream_ended"), 10, "the stream to end")
    leased = printer.lease()
    printer.start(leased)
    # THEN once the stream can open again it resumes after the last event it had
    hop.refuse_streams(False)
    stream_opened(kiosk_log, 2)
    kiosk.wait(ticket, 10, until=lambda s: s.job_state == "printing")
    printer.ack(leased)
    wait_until(lambda: states(seen, ticket.scan_id)[-1:] == ["printed"], 10, "printed")
    # AND it heard each change once, in order, all from the stream
    assert states(seen, ticket.scan_id) == ALL_THE_WAY
    assert hop.calls("GET", "/v1/events")[-1][2]["last-event-id"] == queued_id
    assert hop.calls("GET", "/v1/jobs/") == []


def test_while_the_stream_is_down_states_are_polled_and_polling_stops_once_it_is_back(
    coordinator: ThreadedCoordinator, printer: PlayedPrinter, make_kiosk: MakeKiosk,
    hop: HttpHop, badge: bytes, kiosk_log: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    kiosk = make_kiosk(hop.url)  # polls every 50 ms while the stream is down
    seen: list[ScanStatus] = []
    kiosk.on_change(seen.append)
    stream_opened(kiosk_log)
    ticket = kiosk.submit(unique_attendee(), badge, "printer-a")
    job_id = accepted(kiosk, ticket).job_id
    # GIVEN the stream down, and kept down
    hop.refuse_streams()
    hop.cut_streams()
    # WHEN the job is leased THEN the kiosk learns it by polling
    leased = printer.lease()
    kiosk.wait(ticket, 10, until=lambda s: s.job_state == "leased")
    assert hop.calls("GET", f"/v1/jobs/{job_id}")
    # WHEN the stream is back (resuming: it replays the lease the poll already told)
    hop.refuse_streams(False)
    stream_opened(kiosk_log, 2)
    polled = len(hop.calls("GET", f"/v1/jobs/{job_id}"))
    printer.start(leased)
    printer.ack(leased)
    # THEN the rest comes from the stream, each change once, and the polling stopped
    # (a read already on its way when the stream opened may still land)
    wait_until(lambda: states(seen, ticket.scan_id)[-1:] == ["printed"], 10, "printed")
    assert states(seen, ticket.scan_id) == ALL_THE_WAY
    assert len(hop.calls("GET", f"/v1/jobs/{job_id}")) <= polled + 1


def test_an_event_id_that_is_gone_makes_the_kiosk_read_its_open_jobs_once_and_go_on(
    coordinator: ThreadedCoordinator, printer: PlayedPrinter, make_kiosk: MakeKiosk,
    hop: HttpHop, badge: bytes, kiosk_log: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    # GIVEN a kiosk that left with two jobs queued and its place in the stream kept
    first = make_kiosk(hop.url, **NO_POLLING)
    stream_opened(kiosk_log)
    tickets = [first.submit(unique_attendee(), badge, "printer-a") for _ in range(2)]
    jobs = [accepted(first, ticket).job_id for ticket in tickets]
    wait_until(lambda: every_event_seen(first), 10, "both jobs' queued events")
    first.close()
    kept = stored_event_id(first)
    assert kept == venue_event_ids(coordinator)[-1]
    # WHEN the first job is leased, and the events after the kept id leave the stream
    leased = printer.lease()
    assert leased["job_id"] == jobs[0]
    events = VenueKeys(coordinator.live.settings.venue).events
    coordinator.run(coordinator.redis.xtrim(events, maxlen=0))
    # AND the kiosk starts again
    second = make_kiosk(hop.url, **NO_POLLING)
    seen: list[ScanStatus] = []
    second.on_change(seen.append)
    # THEN the coordinator says the id is gone, and the kiosk reads each open job once
    wait_until(lambda: logged(kiosk_log, "event_id_gone"), 10, "a 410 for the kept id")
    assert "reason=trimmed" in logged(kiosk_log, "event_id_gone")[0]
    second.wait(tickets[0], 10, until=lambda s: s.job_state == "leased")
    wait_until(lambda: all(hop.calls("GET", f"/v1/jobs/{j}") for j in jobs), 10, "reads")
    # AND follows them on a stream from now on: the rest comes as events
    printer.start(leased)
    printer.ack(leased)
    assert printer.print_next() == jobs[1]
    for ticket in tickets:
        assert second.wait(ticket, 10).printed
        wait_until(lambda: states(seen, ticket.scan_id)[-1:] == ["printed"], 10, "printed")  # noqa: B023
        assert states(seen, ticket.scan_id) == ["leased", "printing", "printed"]
    assert [len(hop.calls("GET", f"/v1/jobs/{j}")) for j in jobs] == [1, 1]
    [_, gone, fresh] = hop.calls("GET", "/v1/events")
    assert gone[2]["last-event-id"] == kept and "last-event-id" not in fresh[2]
    wait_until(lambda: stored_event_id(second) not in (None, kept), 5, "a new place kept")


def test_a_kiosk_restarted_resumes_from_the_id_it_kept(
    coordinator: ThreadedCoordinator, printer: PlayedPrinter, make_kiosk: MakeKiosk,
    hop: HttpHop, badge: bytes, kiosk_log: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    # GIVEN a kiosk that stopped after its job was queued
    first = make_kiosk(hop.url, **NO_POLLING)
    stream_opened(kiosk_log)
    ticket = first.submit(unique_attendee(), badge, "printer-a")
    accepted(first, ticket)
    wait_until(lambda: every_event_seen(first), 10, "the job's queued event")
    first.close()
    kept = stored_event_id(first)
    # WHEN the job is leased and started while no kiosk runs, then a kiosk starts again
    leased = printer.lease()
    printer.start(leased)
    second = make_kiosk(hop.url, **NO_POLLING)
    seen: list[ScanStatus] = []
    second.on_change(seen.append)
    # THEN its stream resumes from the kept id: it hears the changes it missed, in order
    second.wait(ticket, 10, until=lambda s: s.job_state == "printing")
    printer.ack(leased)
    assert second.wait(ticket, 10).printed
    wait_until(lambda: states(seen, ticket.scan_id)[-1:] == ["printed"], 10, "printed")
    assert states(seen, ticket.scan_id) == ["leased", "printing", "printed"]
    assert hop.calls("GET", "/v1/events")[-1][2]["last-event-id"] == kept
    assert hop.calls("GET", "/v1/jobs/") == []


def test_when_its_replica_stops_the_stream_resumes_on_the_next(
    coordinator: ThreadedCoordinator, make_coordinator: MakeCoordinator,
    make_kiosk: MakeKiosk, badge: bytes, kiosk_log: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    # GIVEN two replicas, and a kiosk following its jobs on the first
    second = make_coordinator()
    kiosk = make_kiosk([coordinator.url, second.url], **NO_POLLING)
    seen: list[ScanStatus] = []
    kiosk.on_change(seen.append)
    stream_opened(kiosk_log)
    ticket = kiosk.submit(unique_attendee(), badge, "printer-a")
    accepted(kiosk, ticket)
    wait_until(lambda: every_event_seen(kiosk), 10, "the job's queued event")
    # WHEN the first stops (its streams end), and the job prints through the second
    coordinator.stop()
    PlayedPrinter(second).print_next()
    # THEN the kiosk's stream resumes on the second, and it hears every change once
    assert kiosk.wait(ticket, 10).printed
    wait_until(lambda: states(seen, ticket.scan_id)[-1:] == ["printed"], 10, "printed")
    assert states(seen, ticket.scan_id) == ALL_THE_WAY
    [_, resumed] = logged(kiosk_log, "event_stream_opened")
    assert f"url={second.url}" in resumed and "resumed_after=None" not in resumed


def test_with_the_stream_off_job_states_are_polled(
    coordinator: ThreadedCoordinator, printer: PlayedPrinter, make_kiosk: MakeKiosk,
    hop: HttpHop, badge: bytes,
) -> None:  # fmt: skip
    kiosk = make_kiosk(hop.url, follow_events=False)
    ticket = kiosk.submit(unique_attendee(), badge, "printer-a")
    job_id = accepted(kiosk, ticket).job_id
    printer.print_next()
    assert kiosk.wait(ticket, 10).printed
    assert hop.calls("GET", "/v1/events") == []
    assert hop.calls("GET", f"/v1/jobs/{job_id}")
