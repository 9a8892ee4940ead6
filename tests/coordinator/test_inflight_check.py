"""What happens to a failed-over printer's work after the failover: the
acknowledgement check (resolve_inflight) acts only on the print attempt the
failover saw in flight, and retries, uncertain reports and unparked jobs go
where a failover would send them (a healthy, unpaused printer of the job's
pool). Driven through the store and the failover controller on the real Redis,
with no app (so no monitor ticks beside the test); due times are fast-forwarded
by writing a score of 0."""

from __future__ import annotations

import pytest
from redis.asyncio import Redis

from badgeline.coordinator.config import CoordinatorSettings
from badgeline.coordinator.control.failover import FailoverController
from badgeline.coordinator.control.health import probe_verdict
from badgeline.coordinator.store import Store
from badgeline.coordinator.store.jobs import Route
from badgeline.coordinator.store.keys import VenueKeys
from badgeline.protocol.agent_models import AckRequest, HeartbeatRequest, PrinterHealthReport
from badgeline.protocol.models import PrintJob
from badgeline.protocol.states import AckResult
from tests.helpers import job_body


async def beat(store: Store, printer_id: str, **health: object) -> None:
    report = PrinterHealthReport.model_validate({"reachable": True, **health})
    beat = HeartbeatRequest(agent_id=f"pi-{printer_id}", version="t", health=report)
    await store.printers.heartbeat(printer_id, beat, probe_verdict(report))


async def lease_and_start(store: Store, printer_id: str) -> str:
    [leased] = (await store.leases.lease(printer_id, 1, "test")).jobs
    granted = await store.leases.grant_start(printer_id, leased.job_id, leased.lease_id, "test")
    assert granted.granted
    return leased.lease_id


async def test_a_job_granted_again_elsewhere_is_left_printing_by_the_check(
    redis: Redis, settings: CoordinatorSettings
) -> None:
    tuned = settings.model_copy(update={"ack_grace_s": 600.0, "max_attempts": 5})
    store = Store(redis, tuned)
    failover = FailoverController(store, tuned)
    keys = VenueKeys(tuned.venue)
    await beat(store, "printer-a")
    await beat(store, "printer-b")
    job = PrintJob.model_validate(job_body("printer-a"))
    accepted = await store.jobs.accept(job, route=Route("printer-a"), correlation_id="c", actor="t")
    job_id = accepted.job_id
    # GIVEN printer-a printing the job when it jams: the failover schedules the check
    first_lease = await lease_and_start(store, "printer-a")
    await beat(store, "printer-a", jammed=True)
    decision = await failover.execute("printer-a")
    assert decision is not None and decision["inflight_job_ids"] == [job_id]
    # AND its agent reports the attempt failed (the jam), the retry goes to printer-b,
    # which is granted the job and is printing it when the grace period ends
    failed = AckRequest(lease_id=first_lease, result=AckResult.FAILED, error="paper jam")
    assert (await store.leases.ack("printer-a", job_id, failed, "test")).state == "retrying"
    await redis.zadd(keys.retry, {job_id: 0})
    await failover.promote_retries_and_unpark()
    await lease_and_start(store, "printer-b")
    # WHEN the acknowledgement check for printer-a's attempt runs
    await redis.zadd(keys.inflight_checks, {job_id: 0})
    await failover.resolve_inflight()
    # THEN printer-b's attempt is left alone: not re-dispatched, not flagged, still
    # in printer-b's in-flight set (the one a failover of printer-b would check)
    view = await store.jobs.get(job_id)
    assert view is not None
    assert (view.state, view.printer_id) == ("printing", "printer-b")
    assert not view.possible_duplicate
    assert await redis.smembers(keys.printing("printer-b")) == {job_id.encode()}
    assert await redis.zcard(keys.parked) == 0
    [resolved] = await failover.decisions()
    assert resolved["inflight_resolution"] == {job_id: "failed_back"}


@pytest.mark.parametrize("result", [AckResult.FAILED, AckResult.UNCERTAIN])
async def test_a_job_a_drained_printer_fails_to_print_goes_to_a_healthy_one(
    redis: Redis, settings: CoordinatorSettings, result: AckResult
) -> None:
    store = Store(redis, settings)
    failover = FailoverController(store, settings)
    keys = VenueKeys(settings.venue)
    await beat(store, "printer-a")
    await beat(store, "printer-b")
    job = PrintJob.model_validate(job_body("printer-a"))
    job_id = (
        await store.jobs.accept(job, route=Route("printer-a"), correlation_id="c", actor="t")
    ).job_id
    first_lease = await lease_and_start(store, "printer-a")
    # GIVEN printer-a drained by hand while printing (paused for good, as the drain route does)
    seconds, _ = await redis.time()
    await redis.hset(keys.printer("printer-a"), "paused_until_ms", (int(seconds) + 86400) * 1000)
    assert await failover.execute("printer-a", mode="drain", reason="drained by test")
    # WHEN its agent reports that print failed (or cannot tell), and the backoff is over
    report = AckRequest(lease_id=first_lease, result=result, error="zombie spooler")
    await store.leases.ack("printer-a", job_id, report, "test")
    await redis.zadd(keys.retry, {job_id: 0}, xx=True)
    await failover.promote_retries_and_unpark()
    # THEN it goes to the healthy printer, not back to the drained one's queue
    view = await store.jobs.get(job_id)
    assert view is not None
    assert (view.state, view.printer_id) == ("queued", "printer-b")
    assert await store.jobs.peek_queue("printer-b", 10) == [job_id]


async def test_the_in_flight_and_parked_work_of_a_pool_stays_in_its_pool(
    redis: Redis, settings: CoordinatorSettings
) -> None:
    pools = {"hall-a": ["printer-a", "printer-b"], "hall-b": ["printer-c"]}
    tuned = settings.model_copy(update={"pools": pools})
    store = Store(redis, tuned)
    failover = FailoverController(store, tuned)
    keys = VenueKeys(tuned.venue)
    for printer_id in ("printer-a", "printer-b", "printer-c"):
        await beat(store, printer_id)

    async def submit(printer_id: str) -> str:
        job = PrintJob.model_validate(job_body(printer_id))
        return (
            await store.jobs.accept(job, route=Route(printer_id), correlation_id="c", actor="t")
        ).job_id

    # GIVEN printer-a printing a job when it jams, and its pool peer busier than hall-b's printer
    in_flight = await submit("printer-a")
    await lease_and_start(store, "printer-a")
    waiting = [await submit("printer-b"), await submit("printer-b")]
    await beat(store, "printer-a", jammed=True)
    assert await failover.execute("printer-a", targets=await failover.candidates("printer-a"))
    # WHEN its acknowledgement check re-dispatches the job
    await redis.zadd(keys.inflight_checks, {in_flight: 0})
    await failover.resolve_inflight()
    # THEN it goes to its pool peer, as the failover's moves do
    view = await store.jobs.get(in_flight)
    assert view is not None and (view.state, view.printer_id) == ("queued", "printer-b")
    # AND when the pool peer dies too, its work is parked, not sent to the other hall
    await beat(store, "printer-b", jammed=True)
    assert await failover.execute("printer-b", targets=await failover.candidates("printer-b"))
    await failover.promote_retries_and_unpark()
    for job_id in [in_flight, *waiting]:
        parked = await store.jobs.get(job_id)
        assert parked is not None and parked.state == "parked", parked
    assert await store.jobs.peek_queue("printer-c", 10) == []


async def test_a_dead_letter_redriven_while_its_printer_is_dead_is_parked(
    redis: Redis, settings: CoordinatorSettings
) -> None:
    tuned = settings.model_copy(update={"max_attempts": 1})
    store = Store(redis, tuned)
    failover = FailoverController(store, tuned)
    await beat(store, "printer-a")
    job = PrintJob.model_validate(job_body("printer-a"))
    job_id = (
        await store.jobs.accept(job, route=Route("printer-a"), correlation_id="c", actor="t")
    ).job_id
    first_lease = await lease_and_start(store, "printer-a")
    failed = AckRequest(lease_id=first_lease, result=AckResult.FAILED, error="paper jam")
    assert (await store.leases.ack("printer-a", job_id, failed, "test")).state == "failed"
    # GIVEN its printer dead and failed over, and no other printer up
    await beat(store, "printer-a", jammed=True)
    assert await failover.execute("printer-a") is not None
    # WHEN the operator redrives the dead letter
    redriven = await store.jobs.redrive(
        job_id, "operator:ops", await failover.candidates_by_printer()
    )
    assert redriven.outcome == "queued"
    # AND another printer comes up
    await beat(store, "printer-b")
    await failover.promote_retries_and_unpark()
    # THEN the job goes to it, as an accepted job parked for a dead printer would,
    # instead of waiting in the dead printer's queue for that printer to come back
    view = await store.jobs.get(job_id)
    assert view is not None and (view.state, view.printer_id) == ("queued", "printer-b")
    assert await store.jobs.peek_queue("printer-a", 10) == []
