"""One key, one job (invariant 2) for as long as the job is open: the dedupe window
starts when the job closes, not when it was accepted. A job that waits longer
than the window (its printer paused all afternoon) must still turn away the
kiosk's retry of its key, or the attendee gets two badges."""

from __future__ import annotations

from typing import Any

from aiohttp.test_utils import TestClient
from redis.asyncio import Redis

from badgeline.coordinator.config import CoordinatorSettings
from badgeline.coordinator.store.keys import VenueKeys
from tests.coordinator import flows
from tests.coordinator.conftest import MakeClient
from tests.helpers import job_body

Client = TestClient[Any, Any]
WINDOW_S = 600


async def _claim_ttl_ms(redis: Redis, settings: CoordinatorSettings, key: str) -> int:
    """PTTL of the key's claim: -1 no expiry, -2 gone, else the ms left."""
    return int(await redis.pttl(VenueKeys(settings.venue).idempotency(key)))


async def _window_started(redis: Redis, settings: CoordinatorSettings, key: str) -> bool:
    return 0 < await _claim_ttl_ms(redis, settings, key) <= WINDOW_S * 1000


async def test_an_open_job_keeps_its_key_past_the_window_and_printing_starts_it(
    make_client: MakeClient, redis: Redis, settings: CoordinatorSettings
) -> None:
    client = await make_client(dedupe_window_s=WINDOW_S)
    body = job_body()
    job = await flows.submit(client, **body)
    # GIVEN a queued job: its claim has no expiry, so no wait, however long, frees the key
    assert await _claim_ttl_ms(redis, settings, body["idempotency_key"]) == -1
    leased = await flows.lease_one(client)
    await flows.start(client, job["job_id"], leased["lease_id"])
    # AND while it prints, the kiosk's retry still names it
    again = await flows.submit(client, status=200, **body)
    assert again["job_id"] == job["job_id"] and again["state"] == "printing"
    assert await _claim_ttl_ms(redis, settings, body["idempotency_key"]) == -1
    # WHEN it is printed
    await flows.ack(client, job["job_id"], leased["lease_id"])
    # THEN the window starts, and a repeat inside it is still the same job
    assert await _window_started(redis, settings, body["idempotency_key"])
    repeat = await flows.submit(client, status=200, **body)
    assert repeat["job_id"] == job["job_id"] and repeat["state"] == "printed"


async def test_canceling_a_job_starts_its_window(
    make_client: MakeClient, redis: Redis, settings: CoordinatorSettings
) -> None:
    client = await make_client(dedupe_window_s=WINDOW_S)
    body = job_body()
    job = await flows.submit(client, **body)
    await flows.cancel(client, job["job_id"])
    assert await _window_started(redis, settings, body["idempotency_key"])


async def test_a_job_that_failed_out_starts_its_window_and_a_redrive_reopens_it(
    make_client: MakeClient, redis: Redis, settings: CoordinatorSettings
) -> None:
    client = await make_client(dedupe_window_s=WINDOW_S, max_attempts=1)
    body = job_body()
    job = await flows.submit(client, **body)
    leased = await flows.lease_one(client)
    await flows.start(client, job["job_id"], leased["lease_id"])
    # GIVEN a job whose only attempt failed: it is closed, its window runs
    await flows.ack(client, job["job_id"], leased["lease_id"], result="failed", error="jam")
    assert (await flows.get_job(client, job["job_id"]))["state"] == "failed"
    assert await _window_started(redis, settings, body["idempotency_key"])
    # WHEN the operator redrives it
    assert (await flows.redrive(client, job["job_id"]))[job["job_id"]]["outcome"] == "queued"
    # THEN it is open again and its claim waits for it to close again
    assert await _claim_ttl_ms(redis, settings, body["idempotency_key"]) == -1
    again = await flows.submit(client, status=200, **body)
    assert again["job_id"] == job["job_id"] and again["state"] == "queued"


async def test_a_shed_job_closing_leaves_the_claim_of_the_job_that_took_its_key(
    make_client: MakeClient, redis: Redis, settings: CoordinatorSettings
) -> None:
    client = await make_client(dedupe_window_s=WINDOW_S, high_water_mark=1)
    await flows.submit(client)
    body = job_body()
    # GIVEN a job shed at the mark, and the kiosk's retry accepted once the queue moved
    shed = await flows.expect(await client.post("/v1/jobs", json=body, headers=flows.KIOSK), 503)
    await flows.lease(client, max_jobs=4)
    retried = await flows.submit(client, **body)
    # WHEN the shed job is closed (its redrive is suppressed in favour of the retry)
    outcome = (await flows.redrive(client, shed["job_id"]))[shed["job_id"]]
    assert outcome["outcome"] == "suppressed" and outcome["detail"] == retried["job_id"]
    # THEN the key stays with the open retry, with no expiry
    assert await _claim_ttl_ms(redis, settings, body["idempotency_key"]) == -1
    again = await flows.submit(client, status=200, **body)
    assert again["job_id"] == retried["job_id"]
