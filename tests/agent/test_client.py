"""CoordinatorClient against the real coordinator: typed answers, refusals, outages."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from badgeline.agent.client import (
    CoordinatorClient,
    CoordinatorRejected,
    CoordinatorUnavailable,
    UnreadableJob,
)
from badgeline.protocol.models import AckRequest, HeartbeatRequest, LeasedJob, PrinterHealthReport
from badgeline.protocol.states import AckResult, PrinterState
from tests.agent.conftest import Kiosk, LiveCoordinator
from tests.conftest import agent_token
from tests.helpers import wait_for


@pytest.fixture
async def client(coordinator: LiveCoordinator) -> AsyncIterator[CoordinatorClient]:
    async with CoordinatorClient(
        coordinator.url, "printer-a", agent_token("printer-a"), connect_timeout_s=1
    ) as client:
        yield client


def beat(reachable: bool = True) -> HeartbeatRequest:
    return HeartbeatRequest(
        agent_id="pi-7", version="0.1.0", health=PrinterHealthReport(reachable=reachable)
    )


async def test_heartbeat_returns_the_printers_verdict(client: CoordinatorClient) -> None:
    answer = await client.heartbeat(beat())
    assert answer.state is PrinterState.HEALTHY and answer.paused is False
    assert answer.heartbeat_interval_s > 0


async def test_lease_returns_queued_jobs_and_an_empty_list_after_the_wait(
    client: CoordinatorClient, kiosk: Kiosk, badge_ref: str
) -> None:
    await client.heartbeat(beat())
    assert await client.lease(wait_s=0, max_jobs=2) == []
    job_id = await kiosk.submit(badge_ref, "printer-a")
    jobs = await client.lease(wait_s=5, max_jobs=2)
    assert [job.job_id for job in jobs] == [job_id]
    assert jobs[0].lease_id and jobs[0].job.badge_pdf_ref == badge_ref


async def test_the_start_grant_is_idempotent_for_one_lease(
    client: CoordinatorClient, kiosk: Kiosk, badge_ref: str
) -> None:
    await client.heartbeat(beat())
    job_id = await kiosk.submit(badge_ref, "printer-a")
    [job] = await client.lease(wait_s=5, max_jobs=1)
    granted = await client.start(job_id, job.lease_id, correlation_id="corr-test-1")
    # The answer was lost and the agent asks again: the same grant, not a second one.
    again = await client.start(job_id, job.lease_id)
    assert granted.granted and again.granted and again.fence == granted.fence


async def test_a_canceled_job_is_refused_with_its_reason(
    client: CoordinatorClient, kiosk: Kiosk, badge_ref: str
) -> None:
    await client.heartbeat(beat())
    job_id = await kiosk.submit(badge_ref, "printer-a")
    [job] = await client.lease(wait_s=5, max_jobs=1)
    assert await kiosk.cancel(job_id) == 200
    refusal = await client.start(job_id, job.lease_id)
    assert refusal.granted is False and refusal.reason == "canceled"


async def test_acks_are_typed_and_idempotent(
    client: CoordinatorClient, kiosk: Kiosk, badge_ref: str
) -> None:
    await client.heartbeat(beat())
    job_id = await kiosk.submit(badge_ref, "printer-a")
    [job] = await client.lease(wait_s=5, max_jobs=1)
    start = await client.start(job_id, job.lease_id)
    ack = AckRequest(lease_id=job.lease_id, result=AckResult.PRINTED, fence=start.fence)
    first = await client.ack(job_id, ack, correlation_id="corr-test-1")
    again = await client.ack(job_id, ack)
    assert (first.state, first.recorded) == ("printed", True)
    assert (again.state, again.recorded) == ("printed", False)


async def test_a_wrong_token_or_unknown_job_is_rejected_not_retried(
    coordinator: LiveCoordinator, client: CoordinatorClient
) -> None:
    async with CoordinatorClient(coordinator.url, "printer-a", "not-a-token") as stranger:
        with pytest.raises(CoordinatorRejected) as raised:
            await stranger.heartbeat(beat())
    assert raised.value.status == 401 and raised.value.code == "unauthorized"
    ack = AckRequest(lease_id="lease_x", result=AckResult.PRINTED)
    with pytest.raises(CoordinatorRejected) as unknown:
        await client.ack("job_00000000deadbeef", ack)
    assert unknown.value.status == 404


async def test_a_coordinator_that_is_not_there_is_unavailable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    async with CoordinatorClient(f"http://127.0.0.1:{closed_port}", "printer-a", "t") as client:
        with pytest.raises(CoordinatorUnavailable):
            await client.heartbeat(beat())


@pytest.fixture
async def newer_coordinator(aiohttp_server: Any) -> Any:
    """A coordinator of a later version: extra fields in answers, and a 503 on lease."""

    async def heartbeat(request: web.Request) -> web.Response:
        return web.json_response({"state": "healthy", "paused": False,
                                  "heartbeat_interval_s": 1.0, "next_firmware": "2.0"})  # fmt: skip

    async def lease(request: web.Request) -> web.Response:
        body = {"error": {"code": "store_unavailable", "message": "redis is down"}}
        return web.json_response(body, status=503)

    app = web.Application()
    app.router.add_post("/v1/agents/printer-a/heartbeat", heartbeat)
    app.router.add_post("/v1/agents/printer-a/lease", lease)
    return await aiohttp_server(app)


async def test_answers_with_new_fields_are_read_and_5xx_is_unavailable(
    newer_coordinator: Any,
) -> None:
    url = str(newer_coordinator.make_url("")).rstrip("/")
    async with CoordinatorClient(url, "printer-a", "t") as client:
        assert (await client.heartbeat(beat())).state is PrinterState.HEALTHY
        with pytest.raises(CoordinatorUnavailable, match="store_unavailable"):
            await client.lease(wait_s=0, max_jobs=1)


async def test_a_leased_job_that_does_not_validate_is_unreadable_and_the_others_are_read(
    aiohttp_server: Any,
) -> None:
    # GIVEN a coordinator whose lease answer holds a good job and one whose priority
    # this agent cannot read
    good = {"attendee_id": "att-1", "badge_pdf_ref": "https://badges.example/1.pdf",
            "printer_target": "printer-a", "priority": 100,
            "idempotency_key": "key-0001"}  # fmt: skip

    async def lease(request: web.Request) -> web.Response:
        return web.json_response({"jobs": [
            {"job_id": "job_1", "lease_id": "l1", "lease_ttl_s": 30, "job": good},
            {"job_id": "job_2", "lease_id": "l2", "lease_ttl_s": 30,
             "job": {**good, "priority": "urgent"}},
        ]})  # fmt: skip

    app = web.Application()
    app.router.add_post("/v1/agents/printer-a/lease", lease)
    server = await aiohttp_server(app)
    # WHEN the agent leases
    async with CoordinatorClient(str(server.make_url("")).rstrip("/"), "printer-a", "t") as client:
        first, second = await client.lease(wait_s=0, max_jobs=2)
    # THEN the good job is typed, the other is that job's problem, naming the field
    assert isinstance(first, LeasedJob) and first.job.attendee_id == "att-1"
    assert isinstance(second, UnreadableJob) and second.fields == ("priority",)
    assert (second.job_id, second.lease_id, second.payload["priority"]) == ("job_2", "l2", "urgent")


async def test_a_call_before_mdns_finds_the_coordinator_waits_for_it_then_goes_there(
    coordinator: LiveCoordinator,
) -> None:
    # GIVEN a client whose coordinator mDNS has not found yet
    token = agent_token("printer-a")
    async with CoordinatorClient(None, "printer-a", token, request_timeout_s=0.3) as client:
        # THEN a call that is not found a coordinator within its timeout is
        # "unavailable", saying why (the loops back off as in an outage)
        with pytest.raises(CoordinatorUnavailable, match="no coordinator found yet"):
            await client.heartbeat(beat())
        assert client.reachable is False
        # WHEN a call is made, still before the coordinator is found
        client.request_timeout_s = 30
        call = asyncio.create_task(client.heartbeat(beat()))
        # THEN it waits (it does not fail into a back-off that would delay the
        # agent's first heartbeat and lease past the moment the coordinator is found)
        done, _ = await asyncio.wait({call}, timeout=0.2)
        assert not done
        # WHEN mDNS finds the coordinator THEN the waiting call goes there at once
        client.move_to(coordinator.url)
        async with asyncio.timeout(10):
            assert (await call).state is PrinterState.HEALTHY
        assert client.reachable is True and client.last_answer_at is not None


async def test_a_call_waiting_for_mdns_fails_at_once_when_the_agent_stops() -> None:
    # GIVEN a call waiting for mDNS to find the coordinator (30 s timeout)
    async with CoordinatorClient(None, "printer-a", "t", request_timeout_s=30) as client:
        call = asyncio.create_task(client.heartbeat(beat()))
        done, _ = await asyncio.wait({call}, timeout=0.2)
        assert not done
        # WHEN the agent stops THEN the call fails now, not after its timeout
        client.stop_waiting_for_discovery()
        async with asyncio.timeout(5):
            with pytest.raises(CoordinatorUnavailable, match="no coordinator found yet"):
                await call
            # and a later call (the final ack flush) does not wait either
            with pytest.raises(CoordinatorUnavailable, match="no coordinator found yet"):
                await client.heartbeat(beat())


async def test_a_move_ends_a_long_poll_to_the_old_address_at_once(
    coordinator: LiveCoordinator, client: CoordinatorClient
) -> None:
    # GIVEN a lease long-poll waiting at a coordinator that is still up (nothing queued)
    long_poll = asyncio.create_task(client.lease(wait_s=20, max_jobs=1))
    await wait_for(lambda: _in_flight(coordinator))
    # WHEN the coordinator is found elsewhere
    client.move_to("http://127.0.0.1:9")
    # THEN the call in flight fails now, not after its 20 s wait, saying why
    async with asyncio.timeout(2):
        with pytest.raises(
            CoordinatorUnavailable,
            match=r"moved from http://127\.0\.0\.1:\d+ to http://127\.0\.0\.1:9$",
        ):
            await long_poll
    assert client.base_url == "http://127.0.0.1:9"


async def _in_flight(coordinator: LiveCoordinator) -> bool:
    # The long-poll holds an open request on the coordinator's server.
    runner = coordinator._runner
    return bool(runner is not None and runner.server is not None and runner.server.connections)
