"""Reject and accept (as cupsreject / cupsaccept): a rejecting printer takes no new
jobs — a submit naming it is a 409 `printer_rejecting`, routing, spills, moves and
failovers pass it by — while the jobs already in its queue keep printing."""

from __future__ import annotations

from typing import Any

from aiohttp.test_utils import TestClient
from redis.asyncio import Redis

from badgeline.coordinator.config import CoordinatorSettings
from tests.coordinator import flows
from tests.coordinator.conftest import MakeClient
from tests.helpers import job_body, wait_for

Client = TestClient[Any, Any]


async def _operator(client: Client, path: str, body: Any = None, status: int = 200) -> Any:
    return await flows.expect(await client.post(path, json=body, headers=flows.OPERATOR), status)


async def _printer(client: Client, printer_id: str) -> Any:
    printers = await flows.expect(await client.get("/v1/printers", headers=flows.OPERATOR), 200)
    return next(p for p in printers["items"] if p["printer_id"] == printer_id)


async def _decisions(client: Client) -> list[Any]:
    answer = await flows.expect(await client.get("/v1/failovers", headers=flows.OPERATOR), 200)
    decisions: list[Any] = answer["items"]
    return decisions


async def test_a_rejecting_printer_refuses_new_jobs_and_prints_its_queue(
    client: Client, redis: Redis, settings: CoordinatorSettings
) -> None:
    # GIVEN printer-a with a job waiting
    await flows.heartbeat(client, "printer-a")
    waiting = (await flows.submit(client))["job_id"]
    # WHEN an operator rejects new jobs for it, saying why
    answer = await _operator(client, "/v1/printers/printer-a/reject", {"reason": "toner low"})
    assert (answer["rejecting"], answer["rejecting_reason"]) == (True, "toner low")
    # THEN a job naming it is refused, and nothing is written
    before = await flows.venue_snapshot(redis, settings.venue)
    refused = await flows.submit(client, status=409)
    flows.assert_error_shape(refused, "printer_rejecting")
    assert refused["printer_id"] == "printer-a"
    assert await flows.venue_snapshot(redis, settings.venue) == before
    # AND the job it already had still leases and prints
    leased = await flows.lease_one(client)
    assert leased["job_id"] == waiting
    await flows.start(client, waiting, leased["lease_id"])
    assert (await flows.ack(client, waiting, leased["lease_id"]))["state"] == "printed"
    # AND the printers list says it rejects, and why
    listed = await _printer(client, "printer-a")
    assert (listed["rejecting"], listed["rejecting_reason"]) == (True, "toner low")


async def test_accept_takes_new_jobs_again(client: Client) -> None:
    await flows.heartbeat(client, "printer-a")
    await _operator(client, "/v1/printers/printer-a/reject", {})
    await flows.submit(client, status=409)
    # WHEN the operator accepts jobs for it again
    answer = await _operator(client, "/v1/printers/printer-a/accept")
    # THEN it says so, and a job naming it is queued
    assert (answer["rejecting"], answer["rejecting_reason"]) == (False, None)
    assert (await flows.submit(client, status=201))["printer_id"] == "printer-a"


async def test_routing_passes_a_rejecting_printer_by(client: Client) -> None:
    # GIVEN two healthy printers, the idler one rejecting
    await flows.heartbeat(client, "printer-a")
    await flows.heartbeat(client, "printer-b")
    await flows.submit(client, **job_body("printer-b"))
    await _operator(client, "/v1/printers/printer-a/reject")
    # WHEN `auto` jobs come THEN every one goes to the printer that takes work
    for _ in range(3):
        assert (await flows.submit(client, **job_body("auto")))["printer_id"] == "printer-b"
    # AND with every printer rejecting there is none to route to
    await _operator(client, "/v1/printers/printer-b/reject")
    refused = await flows.submit(client, status=503, **job_body("auto"))
    flows.assert_error_shape(refused, "no_printer_available")


async def test_a_failover_and_a_spill_pass_a_rejecting_peer_by(make_client: MakeClient) -> None:
    client = await make_client(high_water_mark=2)
    # GIVEN printer-a full, printer-b idle but rejecting, printer-c taking work
    for printer_id in ("printer-a", "printer-b", "printer-c"):
        await flows.heartbeat(client, printer_id)
    await _operator(client, "/v1/printers/printer-b/reject")
    full = [(await flows.submit(client))["job_id"] for _ in range(2)]
    # WHEN another job names the full printer THEN it spills past the idle, rejecting peer
    assert (await flows.submit(client))["printer_id"] == "printer-c"
    # AND when printer-a dies its queue moves past it too: to printer-c while it has
    # room, the rest parked
    assert await flows.heartbeat(client, "printer-a", jammed=True) == "dead"
    (decision,) = await wait_for(lambda: _decisions(client))
    assert decision["targets"] == {"printer-c": 1}
    assert decision["drained_job_ids"] + decision["parked_job_ids"] == full
    assert await flows.queue_ids(client, "printer-b") == []


async def test_rebalance_moves_nothing_onto_a_rejecting_printer(client: Client) -> None:
    # GIVEN a skewed queue whose only idle peer rejects new jobs
    await flows.heartbeat(client, "printer-a")
    await flows.heartbeat(client, "printer-b")
    for _ in range(4):
        await flows.submit(client)
    await _operator(client, "/v1/printers/printer-b/reject")
    # WHEN the operator rebalances THEN nothing moves to it
    assert (await _operator(client, "/v1/rebalance"))["moved"] == []
    assert await flows.queue_ids(client, "printer-b") == []


async def test_a_long_reason_is_a_422_naming_it(client: Client) -> None:
    await flows.heartbeat(client, "printer-a")
    refused = await _operator(client, "/v1/printers/printer-a/reject", {"reason": "x" * 10_000},
                              status=422)  # fmt: skip
    flows.assert_error_shape(refused, "validation_failed")
    assert [f["loc"] for f in refused["error"]["fields"]] == [["reason"]]
    assert (await _printer(client, "printer-a"))["rejecting"] is False
