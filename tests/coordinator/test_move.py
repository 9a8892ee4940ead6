"""Moving one job to another printer or pool (`POST /v1/jobs/{id}/move`, as `lpmove`):
only a job no printer has started moves; it keeps its id, idempotency key and place in
print order, and its history records the move. Anything else is refused with why."""

from __future__ import annotations

from typing import Any

from aiohttp.test_utils import TestClient
from redis.asyncio import Redis

from badgeline.coordinator.config import CoordinatorSettings
from tests.coordinator import flows
from tests.coordinator.conftest import MakeClient
from tests.helpers import job_body

Client = TestClient[Any, Any]


async def move(client: Client, job_id: str, target: str, status: int = 200) -> Any:
    response = await client.post(f"/v1/jobs/{job_id}/move", json={"printer_target": target},
                                 headers=flows.OPERATOR)  # fmt: skip
    return await flows.expect(response, status)


async def test_a_queued_job_moves_with_its_key_place_and_history(client: Client) -> None:
    # GIVEN printer-b with two jobs of its own, and on printer-a an earlier job
    await flows.heartbeat(client, "printer-a")
    await flows.heartbeat(client, "printer-b")
    body = job_body("printer-a", priority=100)
    early = (await flows.submit(client, **body))["job_id"]
    later = [(await flows.submit(client, **job_body("printer-b")))["job_id"] for _ in range(2)]
    # WHEN an operator moves it to printer-b
    answer = await move(client, early, "printer-b")
    # THEN it is there, ahead of the jobs accepted after it (its score went with it)
    assert answer == {"job_id": early, "state": "queued", "printer_id": "printer-b",
                      "moved_from": "printer-a", "moved": True}  # fmt: skip
    assert await flows.queue_ids(client, "printer-b") == [early, *later]
    assert await flows.queue_ids(client, "printer-a") == []
    # AND it kept its key, and its history says who moved it from where to where
    job = await flows.get_job(client, early)
    assert (job["idempotency_key"], job["printer_id"]) == (body["idempotency_key"], "printer-b")
    last = job["history"][-1]
    assert (last["from"], last["to"], last["actor"]) == ("queued", "queued", "operator:ops")
    assert last["reason"] == "moved by operator:ops from printer-a to printer-b"
    # AND the kiosk's retry of the key finds the same job where it is now
    again = await flows.submit(client, status=200, **body)
    assert (again["job_id"], again["printer_id"], again["position"]) == (early, "printer-b", 0)
    # AND printer-b's agent prints it first
    assert (await flows.lease_one(client, "printer-b"))["job_id"] == early


async def test_a_leased_job_moves_and_its_old_lease_is_refused_the_start(client: Client) -> None:
    await flows.heartbeat(client, "printer-a")
    await flows.heartbeat(client, "printer-b")
    job_id = (await flows.submit(client))["job_id"]
    leased = await flows.lease_one(client)
    # WHEN the job printer-a's agent prefetched is moved
    assert (await move(client, job_id, "printer-b"))["moved"] is True
    # THEN printer-a's agent may not print it, and printer-b's leases it
    refused = await flows.start(client, job_id, leased["lease_id"], status=409)
    assert refused["reason"] == "lease_revoked"
    assert (await flows.lease_one(client, "printer-b"))["job_id"] == job_id


async def test_a_pool_target_picks_the_least_loaded_fit_printer(make_client: MakeClient) -> None:
    client = await make_client(pools={"hall": ["printer-a", "printer-b", "printer-c"]})
    for printer_id in ("printer-a", "printer-b", "printer-c"):
        await flows.heartbeat(client, printer_id)
    job_id = (await flows.submit(client))["job_id"]
    await flows.submit(client, **job_body("printer-b"))
    # WHEN it moves to its pool THEN the idle printer other than its own takes it
    assert (await move(client, job_id, "pool:hall"))["printer_id"] == "printer-c"


async def test_moving_to_where_it_is_changes_nothing(
    client: Client, redis: Redis, settings: CoordinatorSettings
) -> None:
    await flows.heartbeat(client, "printer-a")
    job_id = (await flows.submit(client))["job_id"]
    before = await flows.venue_snapshot(redis, settings.venue)
    answer = await move(client, job_id, "printer-a")
    assert (answer["moved"], answer["printer_id"], answer["moved_from"]) == (
        False, "printer-a", "printer-a")  # fmt: skip
    assert await flows.venue_snapshot(redis, settings.venue) == before


async def test_a_job_printing_printed_or_closed_is_not_movable(
    client: Client, redis: Redis, settings: CoordinatorSettings
) -> None:
    await flows.heartbeat(client, "printer-a")
    await flows.heartbeat(client, "printer-b")
    printing = (await flows.submit(client))["job_id"]
    leased = await flows.lease_one(client)
    await flows.start(client, printing, leased["lease_id"])
    canceled = (await flows.submit(client))["job_id"]
    await flows.cancel(client, canceled)
    # WHEN an operator tries to move the printing job, and the canceled one
    for job_id, state in ((printing, "printing"), (canceled, "canceled")):
        before = await flows.venue_snapshot(redis, settings.venue)
        refused = await move(client, job_id, "printer-b", status=409)
        # THEN each is refused with its state, and nothing changes
        flows.assert_error_shape(refused, "not_movable")
        assert (refused["job_id"], refused["state"]) == (job_id, state)
        assert f"is {state}" in refused["error"]["message"]
        assert await flows.venue_snapshot(redis, settings.venue) == before
    # AND once printed it is still refused
    await flows.ack(client, printing, leased["lease_id"])
    assert (await move(client, printing, "printer-b", status=409))["state"] == "printed"


async def test_a_target_that_cannot_take_it_is_refused_and_the_job_stays(
    make_client: MakeClient,
) -> None:
    client = await make_client(high_water_mark=1, known_printers=["printer-c"])
    await flows.heartbeat(client, "printer-a")
    await flows.heartbeat(client, "printer-b")
    job_id = (await flows.submit(client))["job_id"]
    # an unknown printer (a typo), a rejecting one, a dead one, a full one
    unknown = await move(client, job_id, "printer-q", status=422)
    flows.assert_error_shape(unknown, "unknown_printer")
    assert unknown["error"]["fields"][0]["loc"] == ["printer_target"]
    await flows.expect(await client.post("/v1/printers/printer-b/reject",
                                         headers=flows.OPERATOR), 200)  # fmt: skip
    flows.assert_error_shape(await move(client, job_id, "printer-b", 409), "printer_rejecting")
    await flows.expect(await client.post("/v1/printers/printer-b/accept",
                                         headers=flows.OPERATOR), 200)  # fmt: skip
    await flows.submit(client, **job_body("printer-b"))
    full = await move(client, job_id, "printer-b", 409)
    flows.assert_error_shape(full, "target_unavailable")
    assert (full["printer_id"], full["reason"]) == ("printer-b", "full")
    await flows.heartbeat(client, "printer-c", jammed=True)
    dead = await move(client, job_id, "printer-c", 409)
    assert (dead["error"]["code"], dead["reason"]) == ("target_unavailable", "dead")
    # THEN the job waits where it was, untouched
    job = await flows.get_job(client, job_id)
    assert (job["state"], job["printer_id"], len(job["history"])) == ("queued", "printer-a", 1)


async def test_a_bad_target_or_job_id_is_refused(client: Client) -> None:
    job_id = (await flows.submit(client))["job_id"]
    bad = await move(client, job_id, "printer_B", status=422)
    assert [f["loc"] for f in bad["error"]["fields"]] == [["printer_target"]]
    missing = await move(client, "job_0123456789abcdef", "printer-b", status=404)
    flows.assert_error_shape(missing, "not_found")
