"""Per-kiosk rate limits and daily quotas (docs/api.md, "Limits, slow clients and TLS"),
and the agents' long-poll bound.

Over a limit is a 429 `rate_limited` with `Retry-After`, in the error shape, and the
refused request writes nothing. Agents and operators are not rate limited.
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp.test_utils import TestClient, TestServer
from redis.asyncio import Redis

from badgeline.coordinator.api.ratelimit import LIMITS
from badgeline.coordinator.config import CoordinatorSettings
from tests.conftest import test_tokens as configured_tokens
from tests.coordinator import flows
from tests.coordinator.conftest import MakeClient
from tests.coordinator.test_auth import HEARTBEAT
from tests.helpers import job_body, wait_for

Client = TestClient[Any, Any]
# One token now and then practically never another: refills cannot blur a test.
NO_REFILL: dict[str, Any] = {"kiosk_rate_per_s": 0.001}


async def _submit(client: Client, headers: dict[str, str] = flows.KIOSK, **body: Any) -> Any:
    return await client.post("/v1/jobs", json=job_body(**body), headers=headers)


async def _expect_limited(response: Any, limit: str) -> int:
    body = await flows.expect(response, 429)
    flows.assert_error_shape(body, "rate_limited")
    assert body["limit"] == limit
    retry_after = int(response.headers["Retry-After"])
    assert retry_after >= 1
    return retry_after


async def test_a_kiosk_over_its_burst_is_told_to_retry_and_nothing_is_written(
    make_client: MakeClient, redis: Redis, settings: CoordinatorSettings
) -> None:
    # GIVEN a kiosk that has used its whole burst of 3
    client = await make_client(**NO_REFILL, kiosk_burst=3)
    for _ in range(3):
        await flows.expect(await _submit(client), 201)
    before = await flows.venue_snapshot(redis, settings.venue)
    # WHEN it submits once more
    response = await _submit(client)
    # THEN it gets a 429 with Retry-After, and nothing was written
    assert await _expect_limited(response, "rate") > 60
    assert await flows.venue_snapshot(redis, settings.venue) == before


async def test_the_bucket_refills_at_the_configured_rate(make_client: MakeClient) -> None:
    # GIVEN a kiosk with a burst of 1 refilling twice a second, just refused
    client = await make_client(kiosk_rate_per_s=2.0, kiosk_burst=1)
    await flows.expect(await _submit(client), 201)
    refused = await _submit(client)
    if refused.status == 429:  # (a slow machine may already have refilled)
        assert await _expect_limited(refused, "rate") == 1

    # WHEN it waits, THEN a later submit is accepted again
    async def accepted() -> bool:
        return (await _submit(client)).status == 201

    await wait_for(accepted, timeout_s=10, interval_s=0.1)


async def test_reads_count_against_the_rate_too(make_client: MakeClient) -> None:
    # GIVEN a kiosk with a burst of 2 that submitted one job
    client = await make_client(**NO_REFILL, kiosk_burst=2)
    job_id = (await flows.expect(await _submit(client), 201))["job_id"]
    # WHEN it polls the job twice
    first = await client.get(f"/v1/jobs/{job_id}", headers=flows.KIOSK)
    second = await client.get(f"/v1/jobs/{job_id}", headers=flows.KIOSK)
    # THEN the second poll is over its rate
    await flows.expect(first, 200)
    await _expect_limited(second, "rate")


async def test_a_kiosk_refused_by_role_spends_nothing(make_client: MakeClient) -> None:
    # GIVEN a kiosk with a burst of 1 calling operator paths (403 each)
    client = await make_client(**NO_REFILL, kiosk_burst=1)
    for _ in range(3):
        await flows.expect(await client.get("/v1/dead-letters", headers=flows.KIOSK), 403)
    # WHEN it then submits, THEN its one token is still there
    await flows.expect(await _submit(client), 201)


async def test_the_daily_quota_counts_accepted_jobs_only(
    make_client: MakeClient, redis: Redis, settings: CoordinatorSettings
) -> None:
    # GIVEN a kiosk with a daily quota of 2
    client = await make_client(kiosk_daily_quota=2)
    # WHEN it sends an invalid job, a job, the same job again (a retry) and a second job
    await flows.expect(await _submit(client, priority=5000), 422)
    first = job_body()
    await flows.expect(await client.post("/v1/jobs", json=first, headers=flows.KIOSK), 201)
    await flows.expect(await client.post("/v1/jobs", json=first, headers=flows.KIOSK), 200)
    job_id = (await flows.expect(await _submit(client), 201))["job_id"]
    # THEN only the two new jobs counted: a third is over the quota, writing nothing
    before = await flows.venue_snapshot(redis, settings.venue)
    retry_after = await _expect_limited(await _submit(client), "daily_quota")
    assert retry_after <= 24 * 3600  # until midnight UTC, by the Redis clock
    assert await flows.venue_snapshot(redis, settings.venue) == before
    # AND reading is not a submission: the kiosk can still follow its jobs
    await flows.expect(await client.get(f"/v1/jobs/{job_id}", headers=flows.KIOSK), 200)


async def test_a_token_can_carry_its_own_quota(make_client: MakeClient) -> None:
    # GIVEN a venue quota of 100 and kiosk-1's own quota of 1
    tokens = [t.model_dump() for t in configured_tokens()]
    for entry in tokens:
        if entry["role"] == "kiosk":
            entry["daily_quota"] = 1
    client = await make_client(kiosk_daily_quota=100, tokens=tokens)
    # WHEN it submits two jobs, THEN the second is over its own quota
    await flows.expect(await _submit(client), 201)
    await _expect_limited(await _submit(client), "daily_quota")


async def test_the_quota_is_shared_by_every_replica(make_client: MakeClient) -> None:
    # GIVEN two coordinators on one Redis and a quota of 2
    one, two = await make_client(kiosk_daily_quota=2), await make_client(kiosk_daily_quota=2)
    # WHEN the kiosk has one job accepted by each
    await flows.expect(await _submit(one), 201)
    await flows.expect(await _submit(two), 201)
    # THEN neither accepts a third
    await _expect_limited(await _submit(one), "daily_quota")
    await _expect_limited(await _submit(two), "daily_quota")


async def test_concurrent_submits_never_overshoot_the_quota(make_client: MakeClient) -> None:
    # GIVEN a quota of 5 and 20 submits at once
    client = await make_client(kiosk_daily_quota=5)
    responses = await asyncio.gather(*[_submit(client) for _ in range(20)])
    # THEN exactly 5 were accepted and the rest were told to retry
    statuses = sorted(r.status for r in responses)
    assert statuses == [201] * 5 + [429] * 15, statuses


async def test_operators_and_agents_are_not_kiosk_limited(make_client: MakeClient) -> None:
    # GIVEN kiosk limits a kiosk would hit at once
    client = await make_client(**NO_REFILL, kiosk_burst=1, kiosk_daily_quota=1)
    # WHEN an operator submits and an agent heartbeats and leases, over and over
    for _ in range(5):
        await flows.expect(await _submit(client, headers=flows.OPERATOR), 201)
        beat = await client.post("/v1/agents/printer-a/heartbeat", json=HEARTBEAT,
                                 headers=flows.agent())  # fmt: skip
        await flows.expect(beat, 200)
        await flows.lease(client)
    # THEN none of it was refused (the expectations above), and the kiosk still has its token
    await flows.expect(await _submit(client), 201)


async def test_an_agent_token_holds_a_bounded_number_of_long_polls(
    make_client: MakeClient,
) -> None:
    # GIVEN an agent with its two allowed long-polls open
    client = await make_client(agent_max_long_polls=2, lease_max_wait_s=30)
    polls = [asyncio.create_task(flows.lease(client, wait=30)) for _ in range(2)]
    assert isinstance(client.server, TestServer)
    limits = client.server.app[LIMITS]

    async def both_open() -> bool:
        return sum(limits.long_polls.values()) == 2

    try:
        await wait_for(both_open)
        # WHEN it opens a third
        third = await client.post("/v1/agents/printer-a/lease?wait=0", headers=flows.agent())
        # THEN that one is refused
        await _expect_limited(third, "long_polls")
        # AND another printer's agent is not affected
        await flows.lease(client, "printer-b")
        # AND once work arrives and the polls return, polling is allowed again
        await flows.submit(client)
        await flows.submit(client)
        leased = [job for batch in await asyncio.gather(*polls) for job in batch]
        assert len(leased) == 2
        await flows.lease(client)
    finally:
        for poll in polls:
            poll.cancel()
        await asyncio.gather(*polls, return_exceptions=True)
