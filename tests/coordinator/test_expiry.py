"""expire_after_s: a job no printer has started by its deadline becomes `expired` and
never prints, whether the sweep or a late lease or start finds it first; it is
counted, shown and retired like every finished job."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiohttp.test_utils import TestClient
from redis.asyncio import Redis

from badgeline.coordinator.config import CoordinatorSettings
from badgeline.coordinator.control.audit_export import AuditExport
from badgeline.coordinator.control.retention import RetentionSweeper
from badgeline.coordinator.store import Store
from badgeline.coordinator.store.records import ms_of_time
from tests.coordinator import flows
from tests.coordinator.conftest import MakeClient
from tests.coordinator.sse import Stream
from tests.helpers import job_body, wait_for

Client = TestClient[Any, Any]
SWEEP_OFF = 3600.0  # the app's sweep runs at its start, then not again within a test


async def past_deadline(redis: Redis, job: dict[str, Any]) -> bool:
    """Whether the Redis clock has passed the job's deadline."""
    return ms_of_time(await redis.time()) >= job["expires_at"] * 1000


async def state_of(client: Client, job_id: str) -> str:
    return str((await flows.get_job(client, job_id))["state"])


async def operator_get(client: Client, path: str) -> Any:
    return await flows.expect(await client.get(path, headers=flows.OPERATOR), 200)


@pytest.mark.parametrize(
    "value", [-5, 0, 1.5, "60", True, 6 * 3600 + 1], ids=lambda v: f"expire_after_s={v!r}"
)
async def test_a_deadline_out_of_range_is_a_422_naming_the_field_and_writes_nothing(
    client: Client, redis: Redis, settings: CoordinatorSettings, value: Any
) -> None:
    before = await flows.venue_snapshot(redis, settings.venue)
    response = await client.post(
        "/v1/jobs", json=job_body(expire_after_s=value), headers=flows.KIOSK
    )
    body = await flows.expect(response, 422)
    flows.assert_error_shape(body, "validation_failed")
    assert [field["loc"] for field in body["error"]["fields"]] == [["expire_after_s"]], body
    assert await flows.venue_snapshot(redis, settings.venue) == before


async def test_a_job_queued_behind_a_paused_printer_expires_and_never_prints(
    make_client: MakeClient, redis: Redis
) -> None:
    client = await make_client(expiry_sweep_interval_s=0.05)
    await flows.heartbeat(client)
    paused = await client.post("/v1/printers/printer-a/pause", json={}, headers=flows.OPERATOR)
    await flows.expect(paused, 200)
    events = Stream(await client.get("/v1/events", headers=flows.KIOSK))
    # GIVEN a job with a one-second deadline and one without, queued behind the pause
    late = await flows.submit(client, expire_after_s=1)
    later = await flows.submit(client)
    view = await flows.get_job(client, late["job_id"])
    assert view["expire_after_s"] == 1 and view["expires_at"] > view["created_at"]
    # WHEN the deadline passes
    await wait_for(lambda: _is(client, late["job_id"], "expired"), timeout_s=10)
    # THEN it is expired, says why, and the kiosk was told
    last = (await flows.get_job(client, late["job_id"]))["history"][-1]
    assert (last["from"], last["to"], last["actor"]) == ("queued", "expired", "coordinator:expiry")
    assert "expire_after_s" in last["reason"]
    told = [e for e in await events.job_events(3) if e["job_id"] == late["job_id"]]
    assert [(e["previous_state"], e["state"]) for e in told] == [
        (None, "queued"),
        ("queued", "expired"),
    ]
    assert told[-1]["expires_at"] == view["expires_at"]
    # AND when the printer comes back only the other job reaches it
    await flows.expect(await client.post("/v1/printers/printer-a/resume",
                                         headers=flows.OPERATOR), 200)  # fmt: skip
    leased = await flows.lease(client, max_jobs=4)
    assert [job["job_id"] for job in leased] == [later["job_id"]]
    assert await state_of(client, late["job_id"]) == "expired"
    # AND it is finished: not cancelable, counted in stats, reconciliation and metrics
    await flows.cancel(client, late["job_id"], status=409)
    stats = await operator_get(client, "/v1/stats")
    assert (stats["totals"]["expired"], stats["totals"]["accepted"]) == (1, 2)
    counts = (await operator_get(client, "/v1/reconcile"))["counts"]
    assert (counts["expired"], counts["open"], counts["unaccounted"]) == (1, 1, 0)
    metrics = await client.get("/metrics", headers=flows.OPERATOR)
    assert "badgeline_jobs_expired_total 1.0" in await metrics.text()
    # AND the dashboard's picture carries it
    snapshot = await operator_get(client, "/dashboard/snapshot")
    assert snapshot["stats"]["totals"]["expired"] == 1
    assert snapshot["reconcile"]["counts"]["expired"] == 1


async def _is(client: Client, job_id: str, state: str) -> bool:
    return await state_of(client, job_id) == state


async def test_a_late_lease_or_start_finds_the_deadline_before_any_sweep(
    make_client: MakeClient, redis: Redis
) -> None:
    client = await make_client(expiry_sweep_interval_s=SWEEP_OFF)
    await flows.heartbeat(client)
    # GIVEN two jobs leased and one queued, each with a one-second deadline
    jobs = [await flows.submit(client, expire_after_s=1) for _ in range(3)]
    leases = {job["job_id"]: job["lease_id"] for job in await flows.lease(client, max_jobs=2)}
    assert list(leases) == [job["job_id"] for job in jobs[:2]]
    views = [await flows.get_job(client, job["job_id"]) for job in jobs]
    await wait_for(lambda: past_deadline(redis, views[-1]), timeout_s=5)
    # WHEN, past the deadline and with no sweep run since, an agent asks to start one
    first = jobs[0]["job_id"]
    refused = await flows.start(client, first, leases[first], status=409)
    # THEN the start is refused as expired, and the job is expired there and then
    assert (refused["granted"], refused["reason"]) == (False, "expired")
    assert await state_of(client, first) == "expired"
    # AND a lease hands out nothing: the queued one expires instead of being leased
    assert await flows.lease(client, max_jobs=4) == []
    assert await state_of(client, jobs[2]["job_id"]) == "expired"
    # AND the other leased one, asked again by its agent, is refused too
    second = jobs[1]["job_id"]
    again = await flows.start(client, second, leases[second], status=409)
    assert again["reason"] == "expired"
    stats = await operator_get(client, "/v1/stats")
    assert stats["totals"]["expired"] == 3


async def test_a_start_racing_the_sweep_either_prints_or_expires_never_both(
    make_client: MakeClient, redis: Redis, settings: CoordinatorSettings
) -> None:
    client = await make_client(expiry_sweep_interval_s=SWEEP_OFF, lease_max_jobs=20)
    store = Store(redis, settings)
    await flows.heartbeat(client)
    # GIVEN twenty leased jobs, ten whose deadline has just passed and ten whose
    # deadline comes half a second later
    early = [await flows.submit(client, expire_after_s=1) for _ in range(10)]
    first = await flows.get_job(client, early[0]["job_id"])
    await wait_for(lambda: past_deadline(redis, {"expires_at": first["created_at"] + 0.5}))
    late = [await flows.submit(client, expire_after_s=1) for _ in range(10)]
    leased = await flows.lease(client, max_jobs=20)
    assert [job["job_id"] for job in leased] == [job["job_id"] for job in early + late]
    views = [await flows.get_job(client, job["job_id"]) for job in leased]
    await wait_for(lambda: past_deadline(redis, views[9]))
    # WHEN their agents ask for the starts while the sweep runs
    starts = [client.post(f"/v1/agents/printer-a/jobs/{job['job_id']}/start",
                          json={"lease_id": job["lease_id"]}, headers=flows.agent())
              for job in leased]  # fmt: skip
    answers = await asyncio.gather(*starts, store.expiry.expire_due("test:sweep"),
                                   store.expiry.expire_due("test:sweep"))  # fmt: skip
    # THEN the ten past their deadline expired without a start
    assert [answer.status for answer in answers[:10]] == [409] * 10
    # AND each job either started before its deadline or expired without a start
    for job, answer in zip(leased, answers[:20], strict=True):
        state = await state_of(client, job["job_id"])
        fields = await redis.hmget(store.keys.job(job["job_id"]), ["granted_ms", "expires_ms"])
        grants = await redis.scard(store.keys.grants(job["job_id"]))
        if answer.status == 200:
            assert state == "printing" and grants == 1
            assert int(fields[0]) < int(fields[1]), job
        else:
            assert answer.status == 409 and state == "expired" and grants == 0, job
    # AND once the deadline has passed for all, the rest expire and none starts
    await wait_for(lambda: past_deadline(redis, max(views, key=lambda v: v["expires_at"])))
    await store.expiry.expire_due("test:sweep")
    counts = (await operator_get(client, "/v1/reconcile"))["counts"]
    assert counts["unaccounted"] == 0


async def test_an_attempt_that_fails_after_the_deadline_expires_and_a_late_print_still_counts(
    make_client: MakeClient, redis: Redis
) -> None:
    client = await make_client(expiry_sweep_interval_s=0.05, retry_backoff_unit_s=60)
    await flows.heartbeat(client)
    # GIVEN a job started within its deadline
    job = await flows.submit(client, expire_after_s=1)
    lease = await flows.lease_one(client)
    await flows.start(client, job["job_id"], lease["lease_id"])
    view = await flows.get_job(client, job["job_id"])
    await wait_for(lambda: past_deadline(redis, view), timeout_s=5)
    # WHEN its attempt fails after the deadline
    await flows.ack(client, job["job_id"], lease["lease_id"], result="failed", error="jam")
    # THEN it is not tried again: it expires from its back-off
    await wait_for(lambda: _is(client, job["job_id"], "expired"), timeout_s=10)
    states = [entry["to"] for entry in (await flows.get_job(client, job["job_id"]))["history"]]
    assert states[-2:] == ["retrying", "expired"]
    # AND if that attempt's badge did come out after all, the print is the fact
    await flows.ack(client, job["job_id"], lease["lease_id"], result="printed")
    assert await state_of(client, job["job_id"]) == "printed"
    totals = (await operator_get(client, "/v1/stats"))["totals"]
    assert (totals["printed"], totals["expired"]) == (1, 0)
    assert (await operator_get(client, "/v1/reconcile"))["counts"]["unaccounted"] == 0


async def test_an_expired_job_is_retired_and_exported_like_every_finished_job(
    make_client: MakeClient, redis: Redis, settings: CoordinatorSettings
) -> None:
    tuned = {"expiry_sweep_interval_s": 0.05, "job_retention_s": 1,
             "retention_sweep_interval_s": SWEEP_OFF}  # fmt: skip
    client = await make_client(**tuned)
    venue = CoordinatorSettings.model_validate({**settings.model_dump(), **tuned})
    store = Store(redis, venue)
    export = AuditExport(venue.audit_directory, venue.audit_file_max_bytes)
    sweeper = RetentionSweeper(store, export)
    job = await flows.submit(client, printer_target="printer-b", expire_after_s=1)
    await wait_for(lambda: _is(client, job["job_id"], "expired"), timeout_s=10)

    async def retired() -> bool:
        await sweeper.sweep_once()
        return not await redis.exists(store.keys.job(job["job_id"]))

    await wait_for(retired, timeout_s=20, interval_s=0.2)
    records = [r for r in export.records() if r["job_id"] == job["job_id"]]
    assert [r["job"]["state"] for r in records] == ["expired"]
    assert await redis.zscore(store.keys.expiring, job["job_id"]) is None
    counts = (await operator_get(client, "/v1/reconcile"))["counts"]
    assert (counts["expired"], counts["unaccounted"]) == (1, 0)
