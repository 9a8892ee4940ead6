"""Cancel: allowed while a job is queued or leased (not yet granted); once a
start is granted the badge may be on its way out, so cancel is a 409."""

from __future__ import annotations

from typing import Any

from aiohttp.test_utils import TestClient
from redis.asyncio import Redis

from badgeline.coordinator.config import CoordinatorSettings
from tests.coordinator import flows
from tests.coordinator.conftest import MakeClient
from tests.helpers import job_body

Client = TestClient[Any, Any]


async def test_cancel_while_queued(client: Client) -> None:
    keep = (await flows.submit(client))["job_id"]
    job_id = (await flows.submit(client))["job_id"]
    # WHEN a queued job is canceled
    answer = await flows.cancel(client, job_id)
    # THEN it is canceled and out of its queue; the other job is untouched
    assert answer == {"job_id": job_id, "state": "canceled"}
    assert await flows.queue_ids(client) == [keep]
    job = await flows.get_job(client, job_id)
    assert job["state"] == "canceled"
    assert (job["history"][-1]["from"], job["history"][-1]["to"]) == ("queued", "canceled")


async def test_cancel_while_leased_revokes_the_start(client: Client) -> None:
    job_id = (await flows.submit(client))["job_id"]
    leased = await flows.lease_one(client)
    # WHEN a leased, not yet started job is canceled
    assert (await flows.cancel(client, job_id))["state"] == "canceled"
    # THEN its agent is refused the start
    refused = await flows.start(client, job_id, leased["lease_id"], status=409)
    assert refused["reason"] == "canceled"
    # AND a failed ack from that lease changes nothing
    stale = await flows.ack(client, job_id, leased["lease_id"], result="failed", error="x")
    assert stale["state"] == "canceled" and stale["recorded"] is False


async def test_cancel_once_printing_is_not_cancelable_and_writes_nothing(
    client: Client, redis: Redis, settings: CoordinatorSettings
) -> None:
    job_id = (await flows.submit(client))["job_id"]
    leased = await flows.lease_one(client)
    await flows.start(client, job_id, leased["lease_id"])
    before = await flows.venue_snapshot(redis, settings.venue)
    # WHEN the kiosk tries to cancel a job whose start was granted
    refused = await flows.cancel(client, job_id, status=409)
    # THEN it is refused in the error shape, naming the state, and nothing changed
    flows.assert_error_shape(refused, "not_cancelable")
    assert refused["state"] == "printing" and refused["job_id"] == job_id
    assert await flows.venue_snapshot(redis, settings.venue) == before
    # AND the print completes normally
    await flows.ack(client, job_id, leased["lease_id"])
    refused = await flows.cancel(client, job_id, status=409)
    assert refused["state"] == "printed"


async def test_cancel_is_idempotent(client: Client) -> None:
    job_id = (await flows.submit(client))["job_id"]
    await flows.cancel(client, job_id)
    again = await flows.cancel(client, job_id)
    assert again == {"job_id": job_id, "state": "canceled"}
    history = (await flows.get_job(client, job_id))["history"]
    assert [entry["to"] for entry in history] == ["queued", "canceled"]


async def test_cancel_a_dead_letter_takes_it_off_the_list(make_client: MakeClient) -> None:
    client = await make_client(high_water_mark=1)
    await flows.submit(client)
    shed = await flows.expect(
        await client.post("/v1/jobs", json=job_body(), headers=flows.KIOSK), 503
    )
    assert (await flows.cancel(client, shed["job_id"]))["state"] == "canceled"
    assert await flows.dead_letters(client) == []


async def test_a_canceled_key_still_names_its_job(client: Client) -> None:
    # The key was claimed at acceptance: resubmitting it returns the canceled
    # job rather than printing a second one. A reprint needs a new key.
    body = job_body()
    created = await flows.expect(await client.post("/v1/jobs", json=body, headers=flows.KIOSK),
                                 201)  # fmt: skip
    await flows.cancel(client, created["job_id"])
    again = await flows.expect(await client.post("/v1/jobs", json=body, headers=flows.KIOSK), 200)
    assert again["job_id"] == created["job_id"] and again["state"] == "canceled"
    assert await flows.queue_ids(client) == []


async def test_cancel_an_unknown_job_is_a_404(client: Client) -> None:
    response = await client.post("/v1/jobs/job_0123456789abcdef/cancel", headers=flows.KIOSK)
    flows.assert_error_shape(await flows.expect(response, 404), "not_found")
