"""Redrive of a dead letter whose printer is dead sends it where a failover would
(invariant 7's rule for moved work): to a healthy printer of its printer's pool,
or any healthy printer when its printer is in no pool; with none, it is parked
and goes to the first one that comes back. Never to another hall's printer."""

from __future__ import annotations

from typing import Any

from aiohttp.test_utils import TestClient

from tests.coordinator import flows
from tests.coordinator.conftest import MakeClient
from tests.helpers import wait_for

Client = TestClient[Any, Any]
HALLS = {"hall-a": ["printer-a", "printer-b"], "hall-b": ["printer-c"]}


async def _venue(make_client: MakeClient, pools: dict[str, list[str]]) -> Client:
    # One attempt: a single failed print dead-letters the job. Long heartbeat
    # interval: health is driven by the test's own heartbeats.
    return await make_client(pools=pools, max_attempts=1, heartbeat_interval_s=30.0,
                             monitor_interval_s=0.05)  # fmt: skip


async def _dead_letter_of_dead_printer(client: Client, printer_id: str) -> str:
    """A job whose print failed for good on `printer_id`, which then jammed."""
    job_id: str = (await flows.submit(client, printer_target=printer_id))["job_id"]
    leased = await flows.lease_one(client, printer_id)
    await flows.start(client, job_id, leased["lease_id"], printer_id)
    failed = await flows.ack(client, job_id, leased["lease_id"], result="failed",
                             printer_id=printer_id, error="paper jam")  # fmt: skip
    assert failed["state"] == "failed"
    assert await flows.heartbeat(client, printer_id, jammed=True) == "dead"
    return job_id


async def _job_on(client: Client, job_id: str, state: str, printer_id: str) -> bool:
    job = await flows.get_job(client, job_id)
    return bool((job["state"], job["printer_id"]) == (state, printer_id))


async def test_with_no_healthy_pool_peer_the_redriven_job_is_parked_not_sent_to_another_hall(
    make_client: MakeClient,
) -> None:
    client = await _venue(make_client, HALLS)
    # GIVEN hall-a's printer-b out of paper and hall-b's printer-c healthy and idle
    await flows.heartbeat(client, "printer-a")
    assert await flows.heartbeat(client, "printer-b", paper="out") == "dead"
    await flows.heartbeat(client, "printer-c")
    # AND a dead letter of printer-a, which is dead now
    job_id = await _dead_letter_of_dead_printer(client, "printer-a")
    # WHEN the operator redrives it
    outcome = (await flows.redrive(client, job_id))[job_id]
    # THEN it is parked, not moved to the other hall's printer
    assert (outcome["outcome"], outcome["detail"]) == ("queued", "parked")
    job = await flows.get_job(client, job_id)
    assert (job["state"], job["printer_id"]) == ("parked", "printer-a")
    assert await flows.queue_ids(client, "printer-c") == []
    # AND once its pool peer recovers (three healthy heartbeats), it goes there
    for _ in range(3):
        await flows.heartbeat(client, "printer-b")
    await wait_for(lambda: _job_on(client, job_id, "queued", "printer-b"), timeout_s=30)
    assert await flows.queue_ids(client, "printer-c") == []


async def test_the_redriven_job_goes_to_its_pool_peer_even_when_another_hall_is_emptier(
    make_client: MakeClient,
) -> None:
    client = await _venue(make_client, HALLS)
    for printer_id in ("printer-a", "printer-b", "printer-c"):
        await flows.heartbeat(client, printer_id)
    # GIVEN printer-a's pool peer busier than hall-b's idle printer-c
    waiting = (await flows.submit(client, printer_target="printer-b"))["job_id"]
    # AND a dead letter of printer-a, which is dead now
    job_id = await _dead_letter_of_dead_printer(client, "printer-a")
    # WHEN the operator redrives it
    outcome = (await flows.redrive(client, job_id))[job_id]
    # THEN it is queued behind the pool peer's job, not on the other hall's printer
    assert (outcome["outcome"], outcome["detail"]) == ("queued", "queued")
    assert await _job_on(client, job_id, "queued", "printer-b")
    assert await flows.queue_ids(client, "printer-b") == [waiting, job_id]
    assert await flows.queue_ids(client, "printer-c") == []


async def test_a_printer_in_no_pool_has_its_redriven_job_go_to_any_healthy_printer(
    make_client: MakeClient,
) -> None:
    # GIVEN printer-c in no pool, and only hall-a's printer-a healthy besides it
    client = await _venue(make_client, {"hall-a": ["printer-a", "printer-b"]})
    await flows.heartbeat(client, "printer-a")
    await flows.heartbeat(client, "printer-c")
    # AND a dead letter of printer-c, which is dead now
    job_id = await _dead_letter_of_dead_printer(client, "printer-c")
    # WHEN the operator redrives it
    outcome = (await flows.redrive(client, job_id))[job_id]
    # THEN it goes to printer-a, as printer-c's failover would send it
    assert (outcome["outcome"], outcome["detail"]) == ("queued", "queued")
    assert await _job_on(client, job_id, "queued", "printer-a")
