"""Leases and start grants (invariant 5): the long-poll, lease expiry, and the
start fence that is granted only to the current lease holder."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestClient
from redis.asyncio import Redis

from badgeline.coordinator.api.context import COORDINATOR
from badgeline.coordinator.app import create_app
from badgeline.coordinator.config import CoordinatorSettings
from badgeline.coordinator.store.keys import VenueKeys
from tests.conftest import OPERATOR_TOKEN, agent_token, auth
from tests.coordinator import flows
from tests.coordinator.conftest import MakeClient
from tests.helpers import wait_for

Client = TestClient[Any, Any]


async def _state(client: Client, job_id: str) -> str:
    state: str = (await flows.get_job(client, job_id))["state"]
    return state


async def test_a_waiting_long_poll_wakes_when_a_job_is_enqueued(client: Client) -> None:
    hub = client.app[COORDINATOR].wakeups
    # GIVEN an agent parked in a long-poll on an empty queue
    poll = asyncio.create_task(flows.lease(client, wait=10))
    await wait_for(lambda: _true(hub.waiting("printer-a") == 1), timeout_s=5)
    # WHEN a kiosk submits a job for that printer
    created = await flows.submit(client)
    # THEN the long-poll returns with that job well before its 10 s wait is over
    done, _ = await asyncio.wait({poll}, timeout=5)
    assert poll in done, "the long-poll was not woken by the enqueue"
    jobs = poll.result()
    assert [job["job_id"] for job in jobs] == [created["job_id"]]
    assert jobs[0]["job"]["idempotency_key"] and jobs[0]["lease_ttl_s"] > 0


async def test_a_wake_for_another_printer_does_not_end_the_poll(client: Client) -> None:
    hub = client.app[COORDINATOR].wakeups
    poll = asyncio.create_task(flows.lease(client, "printer-a", wait=1))
    await wait_for(lambda: _true(hub.waiting("printer-a") == 1), timeout_s=5)
    await flows.submit(client, printer_target="printer-b")
    # THEN printer-a's poll runs out empty and printer-b's job is still queued for printer-b
    assert await poll == []
    assert len(await flows.queue_ids(client, "printer-b")) == 1


async def test_stopping_answers_parked_long_polls_at_once(
    redis: Redis, settings: CoordinatorSettings
) -> None:
    # GIVEN a coordinator serving on a real socket, with an agent parked in a 120 s poll
    app = create_app(settings.model_copy(update={"lease_max_wait_s": 120.0}), redis)
    runner = web.AppRunner(app)  # aiohttp's default: waits up to 60 s for open requests
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    async with aiohttp.ClientSession() as session:
        poll = asyncio.create_task(session.post(
            f"http://127.0.0.1:{port}/v1/agents/printer-a/lease?wait=120",
            headers=auth(agent_token("printer-a")),
        ))  # fmt: skip
        hub = app[COORDINATOR].wakeups
        await wait_for(lambda: _true(hub.waiting("printer-a") == 1), timeout_s=10)
        # WHEN it stops (SIGTERM runs this same cleanup)
        stopping = asyncio.create_task(runner.cleanup())
        # THEN the poll is answered, empty, instead of being cut off after 60 s
        answer = await asyncio.wait_for(poll, timeout=45)
        assert answer.status == 200 and (await answer.json())["jobs"] == []
        await asyncio.wait_for(stopping, timeout=45)


async def _true(value: bool) -> bool:
    return value


async def test_a_long_poll_with_nothing_to_do_returns_no_jobs(client: Client) -> None:
    assert await flows.lease(client, wait=0.2) == []
    assert await flows.lease(client, wait=0) == []


async def test_lease_query_is_validated(client: Client) -> None:
    for query in ("wait=-1", "wait=abc", "wait=nan", "wait=inf", "max=0", "max=1.5", "x=1"):
        response = await client.post(f"/v1/agents/printer-a/lease?{query}", headers=flows.agent())
        flows.assert_error_shape(await flows.expect(response, 422), "validation_failed")


async def test_an_expired_lease_returns_ungranted_jobs_to_the_head_of_the_queue(
    make_client: MakeClient,
) -> None:
    client = await make_client(lease_ttl_s=1.0, lease_scan_interval_s=0.1)
    # GIVEN two jobs leased together; only the first is granted a start
    granted_id = (await flows.submit(client, priority=10))["job_id"]
    ungranted_id = (await flows.submit(client, priority=10))["job_id"]
    leased = {job["job_id"]: job for job in await flows.lease(client, max_jobs=2)}
    assert set(leased) == {granted_id, ungranted_id}
    await flows.start(client, granted_id, leased[granted_id]["lease_id"])
    # AND a job of the same priority that arrived after them is waiting
    later_id = (await flows.submit(client, priority=10))["job_id"]
    # WHEN the lease runs out
    await wait_for(lambda: _is(client, ungranted_id, "queued"), timeout_s=10)
    # THEN the ungranted job is back at the head of the queue, ahead of the later one
    assert await flows.queue_ids(client) == [ungranted_id, later_id]
    job = await flows.get_job(client, ungranted_id)
    assert job["history"][-1]["from"] == "leased" and "expired" in job["history"][-1]["reason"]
    # AND the granted job stays printing past its lease time
    assert await _state(client, granted_id) == "printing"
    # AND the old lease can no longer start the returned job
    refused = await flows.start(client, ungranted_id, leased[ungranted_id]["lease_id"],
                                status=409)  # fmt: skip
    assert refused["granted"] is False and refused["reason"] == "lease_revoked"
    # AND the printing job's ack still lands
    await flows.ack(client, granted_id, leased[granted_id]["lease_id"])
    assert await _state(client, granted_id) == "printed"


async def _is(client: Client, job_id: str, state: str) -> bool:
    return await _state(client, job_id) == state


async def test_start_is_idempotent_for_the_same_lease(client: Client) -> None:
    job_id = (await flows.submit(client))["job_id"]
    leased = await flows.lease_one(client)
    first = await flows.start(client, job_id, leased["lease_id"])
    second = await flows.start(client, job_id, leased["lease_id"])
    assert first == second == {"granted": True, "fence": 1, "reason": None}
    history = (await flows.get_job(client, job_id))["history"]
    assert [entry["to"] for entry in history] == ["queued", "leased", "printing"]


async def test_start_is_refused_for_a_printed_job(client: Client) -> None:
    job_id = (await flows.submit(client))["job_id"]
    leased = await flows.lease_one(client)
    await flows.start(client, job_id, leased["lease_id"])
    await flows.ack(client, job_id, leased["lease_id"])
    refused = await flows.start(client, job_id, leased["lease_id"], status=409)
    flows.assert_error_shape(refused, "start_refused")
    assert refused["granted"] is False and refused["reason"] == "already_printed"


async def test_start_is_refused_for_a_canceled_job(client: Client) -> None:
    job_id = (await flows.submit(client))["job_id"]
    leased = await flows.lease_one(client)
    await flows.cancel(client, job_id)
    refused = await flows.start(client, job_id, leased["lease_id"], status=409)
    assert refused["granted"] is False and refused["reason"] == "canceled"


async def test_start_is_refused_for_a_revoked_lease(client: Client) -> None:
    # GIVEN a job whose first lease failed it back to the queue and which was leased again
    job_id = (await flows.submit(client))["job_id"]
    old = await flows.lease_one(client)
    await flows.ack(client, job_id, old["lease_id"], result="failed", error="paper jam")
    # (the retry backoff is a few ms in tests; the long-poll wakes when it is over)
    [new] = await flows.lease(client, wait=10)
    # WHEN the holder of the old lease asks to start
    refused = await flows.start(client, job_id, old["lease_id"], status=409)
    # THEN it is refused, and the current holder still gets the grant
    assert refused["reason"] == "lease_revoked"
    assert (await flows.start(client, job_id, new["lease_id"]))["granted"] is True


async def test_start_with_another_printers_token_is_forbidden(client: Client) -> None:
    job_id = (await flows.submit(client))["job_id"]
    leased = await flows.lease_one(client)
    path = f"/v1/agents/printer-a/jobs/{job_id}/start"
    # WHEN printer-b's agent asks to start printer-a's job on printer-a's path: 403
    response = await client.post(path, json={"lease_id": leased["lease_id"]},
                                 headers=flows.agent("printer-b"))  # fmt: skip
    flows.assert_error_shape(await flows.expect(response, 403), "forbidden")
    # AND on its own path, with printer-a's lease id: refused
    refused = await flows.start(client, job_id, leased["lease_id"], printer_id="printer-b",
                                status=409)  # fmt: skip
    assert refused["reason"] == "lease_revoked"
    # AND the job is still leased to printer-a, which can start it
    assert await _state(client, job_id) == "leased"
    assert (await flows.start(client, job_id, leased["lease_id"]))["granted"] is True


async def test_start_of_an_unknown_job_is_a_404(client: Client) -> None:
    response = await client.post("/v1/agents/printer-a/jobs/job_0123456789abcdef/start",
                                 json={"lease_id": "lease_x-1"}, headers=flows.agent())  # fmt: skip
    flows.assert_error_shape(await flows.expect(response, 404), "not_found")


async def test_a_lease_takes_at_most_max_jobs_from_the_head(client: Client) -> None:
    ids = [(await flows.submit(client))["job_id"] for _ in range(3)]
    first = await flows.lease(client, max_jobs=2)
    assert [job["job_id"] for job in first] == ids[:2]
    assert len({job["lease_id"] for job in first}) == 2
    assert await flows.queue_ids(client) == ids[2:]


async def test_concurrent_leases_never_hand_out_the_same_job(client: Client) -> None:
    # GIVEN ten queued jobs and twenty agents' long-polls racing for them
    ids = {(await flows.submit(client))["job_id"] for _ in range(10)}
    polls = [flows.lease(client, wait=0.5, max_jobs=2) for _ in range(20)]
    # WHEN they all lease at once
    leased = [job for batch in await asyncio.gather(*polls) for job in batch]
    # THEN every job went to exactly one lease
    assert sorted(job["job_id"] for job in leased) == sorted(ids)
    assert len({job["lease_id"] for job in leased}) == len(ids)


async def test_concurrent_starts_for_one_lease_get_one_fence(client: Client) -> None:
    job_id = (await flows.submit(client))["job_id"]
    leased = await flows.lease_one(client)
    answers = await asyncio.gather(
        *[flows.start(client, job_id, leased["lease_id"]) for _ in range(10)]
    )
    assert {answer["fence"] for answer in answers} == {1}
    history = (await flows.get_job(client, job_id))["history"]
    assert [entry["to"] for entry in history].count("printing") == 1


async def test_a_parked_long_poll_wakes_when_its_paused_printer_is_resumed(
    client: Client,
) -> None:
    # Enqueue publishes a wake-up only when a queue goes from empty to one job, so
    # a resume must wake the agent parked on a queue that filled while paused.
    hub = client.app[COORDINATOR].wakeups
    ops = auth(OPERATOR_TOKEN)
    # GIVEN a paused printer with a job queued and its agent parked in a long-poll
    await flows.expect(await client.post("/v1/printers/printer-a/pause", json={}, headers=ops), 200)
    queued = (await flows.submit(client))["job_id"]
    poll = asyncio.create_task(flows.lease(client, wait=20))
    await wait_for(lambda: _true(hub.waiting("printer-a") == 1), timeout_s=5)
    second = (await flows.submit(client))["job_id"]  # no wake-up: the queue was not empty
    assert not poll.done()
    # WHEN an operator resumes it
    await flows.expect(await client.post("/v1/printers/printer-a/resume", headers=ops), 200)
    # THEN the poll returns the first job long before its 20 s are over
    done, _ = await asyncio.wait({poll}, timeout=5)
    assert poll in done, "the resumed printer's parked long-poll was not woken"
    assert [job["job_id"] for job in poll.result()] == [queued]
    assert await flows.queue_ids(client) == [second]


async def test_a_parked_long_poll_gets_the_jobs_when_a_timed_pause_runs_out(
    make_client: MakeClient,
) -> None:
    # Nobody publishes when a timed pause simply runs out (the end is only a time in
    # the printer hash), so the parked lease itself must look again at the pause's end.
    client = await make_client(lease_max_wait_s=120.0)
    hub = client.app[COORDINATOR].wakeups
    ops = auth(OPERATOR_TOKEN)
    # GIVEN printer-a paused for a couple of seconds, and its agent parked in a 120 s poll
    await flows.expect(
        await client.post("/v1/printers/printer-a/pause", json={"for_s": 2.0}, headers=ops), 200
    )
    poll = asyncio.create_task(flows.lease(client, wait=120))
    try:
        await wait_for(lambda: _true(hub.waiting("printer-a") == 1), timeout_s=10)
        # WHEN a job is queued while the printer is still paused (its wake-up finds the
        # printer paused, and the poll parks again)
        queued = (await flows.submit(client))["job_id"]
        # THEN once the pause runs out the poll returns that job, long before its 120 s
        done, _ = await asyncio.wait({poll}, timeout=60)
        assert poll in done, "the long-poll slept through the end of the pause"
        assert [job["job_id"] for job in poll.result()] == [queued]
    finally:
        poll.cancel()


async def test_a_parked_long_poll_follows_a_pause_shortened_by_a_new_one(
    make_client: MakeClient,
) -> None:
    client = await make_client(lease_max_wait_s=120.0)
    hub = client.app[COORDINATOR].wakeups
    ops = auth(OPERATOR_TOKEN)
    # GIVEN printer-a paused until resumed, a job queued and its agent parked in a 120 s poll
    await flows.expect(await client.post("/v1/printers/printer-a/pause", json={}, headers=ops), 200)
    queued = (await flows.submit(client))["job_id"]
    poll = asyncio.create_task(flows.lease(client, wait=120))
    try:
        await wait_for(lambda: _true(hub.waiting("printer-a") == 1), timeout_s=10)
        # WHEN the operator pauses it again, now for a second only
        await flows.expect(
            await client.post("/v1/printers/printer-a/pause", json={"for_s": 1.0}, headers=ops),
            200,
        )
        # THEN the poll returns the job once that second is over, not after 120 s
        done, _ = await asyncio.wait({poll}, timeout=60)
        assert poll in done, "the long-poll kept waiting for the earlier, longer pause"
        assert [job["job_id"] for job in poll.result()] == [queued]
    finally:
        poll.cancel()


async def test_a_lease_skips_queue_entries_whose_job_is_gone(
    client: Client, redis: Redis, settings: CoordinatorSettings
) -> None:
    # GIVEN a queue whose head entry names a job that no longer exists (its hash expired)
    job_id = (await flows.submit(client, priority=10))["job_id"]
    queue = VenueKeys(settings.venue).queue("printer-a")
    await redis.zadd(queue, {"job_0000000000000000": 0})
    # WHEN the agent leases one job
    jobs = await flows.lease(client, wait=0, max_jobs=1)
    # THEN it gets the real job, not an empty answer that would park its long-poll
    assert [job["job_id"] for job in jobs] == [job_id]


async def test_only_a_queue_that_was_empty_publishes_a_wake_up(
    client: Client, redis: Redis, settings: CoordinatorSettings
) -> None:
    pubsub = redis.pubsub()
    await pubsub.subscribe(VenueKeys(settings.venue).wake_channel)
    try:
        # WHEN three jobs are queued for one printer and one for another
        for _ in range(3):
            await flows.submit(client)
        await flows.submit(client, printer_target="printer-b")
        # THEN one wake-up per printer: the first job of each queue
        heard: list[str] = []

        async def both_heard() -> bool:
            message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=0.1)
            if message is not None:
                heard.append(message["data"].decode())
            return len(heard) >= 2

        await wait_for(both_heard, timeout_s=5)
        assert await pubsub.get_message(ignore_subscribe_messages=True, timeout=0.3) is None
        assert heard == ["printer-a", "printer-b"]
    finally:
        await pubsub.aclose()


async def test_a_renewed_lease_outlives_its_first_expiry_and_a_lost_one_is_not_renewed(
    make_client: MakeClient,
) -> None:
    client = await make_client(lease_ttl_s=2.0, lease_scan_interval_s=0.05)
    # GIVEN a leased job whose badge waits behind a slow printer
    job_id = (await flows.submit(client))["job_id"]
    leased = await flows.lease_one(client)
    renew_path = f"/v1/agents/printer-a/jobs/{job_id}/renew"
    body = {"lease_id": leased["lease_id"]}
    # WHEN its agent renews it every quarter lease, for twice its time
    for _ in range(8):
        answer = await flows.expect(
            await client.post(renew_path, json=body, headers=flows.agent()), 200
        )
        assert answer == {"renewed": True, "lease_ttl_s": 2.0, "state": None}
        await asyncio.sleep(0.5)  # the agent's own pacing, not a wait for the server
    # THEN it is still leased to it, and its start is granted
    assert (await flows.get_job(client, job_id))["state"] == "leased"
    await flows.start(client, job_id, leased["lease_id"])
    # AND a renewal once the job left `leased` renews nothing, and says why
    answer = await flows.expect(await client.post(renew_path, json=body, headers=flows.agent()),
                                200)  # fmt: skip
    assert answer == {"renewed": False, "lease_ttl_s": 2.0, "state": "printing"}


async def test_only_the_lease_holder_can_renew_it(client: Client) -> None:
    job_id = (await flows.submit(client))["job_id"]
    leased = await flows.lease_one(client)
    # Another printer's agent, with a lease id it does not hold
    response = await client.post(
        f"/v1/agents/printer-b/jobs/{job_id}/renew", json={"lease_id": leased["lease_id"]},
        headers=flows.agent("printer-b"),
    )  # fmt: skip
    assert (await flows.expect(response, 200))["renewed"] is False
    bogus = await client.post(
        f"/v1/agents/printer-a/jobs/{job_id}/renew",
        json={"lease_id": "lease_forged-1"},
        headers=flows.agent(),
    )
    assert (await flows.expect(bogus, 200))["renewed"] is False
