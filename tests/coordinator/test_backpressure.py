"""Bounded queues, nothing shed silently (invariant 4): a job over the high-water
mark is dead-lettered with its reason and the kiosk is told; redrive goes through
the dedupe gate, so a key accepted again meanwhile can never print twice."""

from __future__ import annotations

from typing import Any

from aiohttp.test_utils import TestClient
from redis.asyncio import Redis

from badgeline.coordinator.config import CoordinatorSettings
from badgeline.coordinator.store.keys import VenueKeys
from tests.coordinator import flows
from tests.coordinator.conftest import MakeClient
from tests.helpers import job_body, wait_for

MARK = 5
Client = TestClient[Any, Any]


async def _fill(client: Client) -> list[str]:
    return [(await flows.submit(client))["job_id"] for _ in range(MARK)]


async def _shed(client: Client, body: dict[str, Any]) -> dict[str, Any]:
    response = await client.post("/v1/jobs", json=body, headers=flows.KIOSK)
    shed: dict[str, Any] = await flows.expect(response, 503)
    assert response.headers["Retry-After"].isdigit()
    assert shed["correlation_id"] == response.headers["X-Correlation-ID"]
    return shed


async def _drain(client: Client) -> None:
    while await flows.lease(client, max_jobs=4):
        pass


async def _shed_then_accepted_again(client: Client) -> tuple[dict[str, Any], dict[str, Any]]:
    """A job shed at the mark, and the kiosk's retry of its key accepted once the queue drained."""
    await _fill(client)
    body = job_body()
    shed = await _shed(client, body)
    await _drain(client)
    retried = await flows.expect(await client.post("/v1/jobs", json=body, headers=flows.KIOSK),
                                 201)  # fmt: skip
    assert retried["job_id"] != shed["job_id"]
    return shed, retried


async def test_a_job_over_the_mark_is_dead_lettered_and_the_kiosk_is_told(
    make_client: MakeClient,
) -> None:
    client = await make_client(high_water_mark=MARK)
    # GIVEN a printer queue at its high-water mark
    queued = await _fill(client)
    # WHEN one more job is submitted
    shed = await _shed(client, job_body())
    # THEN the kiosk gets a 503 in the error shape with the job id and the reason
    flows.assert_error_shape(shed, "queue_full")
    assert shed["state"] == "dead_lettered" and shed["reason"] == "backpressure"
    # AND the queue never went over the mark
    assert await flows.queue_ids(client) == queued
    # AND the job is listed as a dead letter with its reason and correlation id
    letters = await flows.dead_letters(client)
    assert [letter["job_id"] for letter in letters] == [shed["job_id"]]
    assert "backpressure" in letters[0]["reason"]
    assert letters[0]["correlation_id"] == shed["correlation_id"]
    assert (await flows.get_job(client, shed["job_id"]))["state"] == "dead_lettered"


async def test_redrive_waits_for_room_then_queues_the_job(make_client: MakeClient) -> None:
    client = await make_client(high_water_mark=MARK)
    await _fill(client)
    shed = await _shed(client, job_body())
    # WHEN it is redriven while the queue is still full
    still = await flows.redrive(client, shed["job_id"])
    # THEN it stays a dead letter
    assert still[shed["job_id"]]["outcome"] == "still_shed"
    assert [d["job_id"] for d in await flows.dead_letters(client)] == [shed["job_id"]]
    # WHEN the queue drains and it is redriven again
    await _drain(client)
    redriven = await flows.redrive(client)
    # THEN it is queued, off the dead-letter list, and leasable
    assert redriven[shed["job_id"]]["outcome"] == "queued"
    assert await flows.dead_letters(client) == []
    job = await flows.get_job(client, shed["job_id"])
    assert job["state"] == "queued" and job["history"][-1]["from"] == "dead_lettered"
    assert [j["job_id"] for j in await flows.lease(client)] == [shed["job_id"]]


async def test_redrive_of_a_job_whose_key_was_accepted_again_is_suppressed(
    make_client: MakeClient,
) -> None:
    client = await make_client(high_water_mark=MARK)
    # GIVEN the kiosk retried the same key after the queue drained, and got it accepted
    shed, retried = await _shed_then_accepted_again(client)
    # WHEN the operator redrives the dead letter
    outcome = (await flows.redrive(client, shed["job_id"]))[shed["job_id"]]
    # THEN it is suppressed in favour of the accepted job, and never queued
    assert outcome["outcome"] == "suppressed" and outcome["detail"] == retried["job_id"]
    assert await flows.queue_ids(client) == [retried["job_id"]]
    job = await flows.get_job(client, shed["job_id"])
    assert job["state"] == "canceled"
    assert "queued" not in [entry["to"] for entry in job["history"]]
    assert await flows.dead_letters(client) == []
    # AND a second redrive does nothing
    again = await flows.redrive(client, shed["job_id"])
    assert again[shed["job_id"]]["outcome"] == "not_dead_lettered"


async def test_a_dead_letter_outliving_the_dedupe_window_is_still_suppressed(
    make_client: MakeClient, redis: Redis, settings: CoordinatorSettings
) -> None:
    client = await make_client(high_water_mark=MARK)
    # GIVEN the kiosk's retry of the same key was accepted and printed
    shed, retried = await _shed_then_accepted_again(client)
    leased = await flows.lease_one(client)
    assert leased["job_id"] == retried["job_id"]
    await flows.start(client, leased["job_id"], leased["lease_id"])
    await flows.ack(client, leased["job_id"], leased["lease_id"])
    # AND the dedupe window has passed (the key's TTL runs out), the dead letter still listed
    key = VenueKeys(settings.venue).idempotency(
        (await flows.get_job(client, retried["job_id"]))["idempotency_key"]
    )
    await redis.pexpire(key, 1)
    await wait_for(lambda: _gone(redis, key))
    # WHEN the operator redrives the dead letter
    outcome = (await flows.redrive(client, shed["job_id"]))[shed["job_id"]]
    # THEN it is suppressed in favour of the printed job: the attendee gets one badge
    assert outcome["outcome"] == "suppressed" and outcome["detail"] == retried["job_id"]
    assert await flows.queue_ids(client) == []
    assert (await flows.get_job(client, shed["job_id"]))["state"] == "canceled"


async def _gone(redis: Redis, key: str) -> bool:
    return not await redis.exists(key)


async def test_the_same_key_shed_twice_is_redriven_once(make_client: MakeClient) -> None:
    client = await make_client(high_water_mark=MARK)
    await _fill(client)
    body = job_body()
    # GIVEN the kiosk's retry was shed too: two dead letters with one key
    first, second = await _shed(client, body), await _shed(client, body)
    await _drain(client)
    # WHEN both are redriven
    outcomes = await flows.redrive(client)
    # THEN exactly one is queued; the other is suppressed in its favour (which one goes
    # first is the dead letters' order: by the millisecond each was shed, and two shed
    # in the same millisecond in either order)
    queued, suppressed = sorted((first["job_id"], second["job_id"]),
                                key=lambda job_id: outcomes[job_id]["outcome"])  # fmt: skip
    assert outcomes[queued]["outcome"] == "queued"
    assert outcomes[suppressed] == {"job_id": suppressed, "outcome": "suppressed",
                                    "detail": queued}  # fmt: skip
    assert await flows.queue_ids(client) == [queued]


async def test_redrive_refuses_ids_that_are_not_job_ids(client: Client) -> None:
    response = await client.post("/v1/dead-letters/redrive", json={"ids": ["job_x:history"]},
                                 headers=flows.OPERATOR)  # fmt: skip
    body = await flows.expect(response, 422)
    flows.assert_error_shape(body, "validation_failed")
    assert body["error"]["fields"][0]["loc"] == ["ids", 0]
    unknown = await flows.redrive(client, "job_0123456789abcdef")
    assert unknown["job_0123456789abcdef"]["outcome"] == "not_dead_lettered"
