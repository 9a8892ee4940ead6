"""Jobs for a pool or `auto`: the accept script picks the printer in the same
atomic step as the enqueue, so a burst of kiosks spreads over the printers."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from aiohttp.test_utils import TestClient
from redis.asyncio import Redis

from badgeline.coordinator.config import CoordinatorSettings
from badgeline.coordinator.control.lease_scanner import repair_leased_sets_once
from badgeline.coordinator.store import Store
from badgeline.coordinator.store.keys import VenueKeys
from tests.coordinator import flows
from tests.coordinator.conftest import MakeClient
from tests.helpers import job_body, wait_for

Client = TestClient[Any, Any]
HEALTHY = {"reachable": True, "jammed": False, "cover_open": False, "paper": "ok"}
PRINTERS = ("printer-a", "printer-b", "printer-c")


async def _beat(client: Client, printer_id: str, **health: Any) -> None:
    body = {"agent_id": f"pi-{printer_id}", "version": "test", "health": {**HEALTHY, **health}}
    await flows.expect(await client.post(f"/v1/agents/{printer_id}/heartbeat", json=body,
                                         headers=flows.agent(printer_id)), 200)  # fmt: skip


async def test_a_burst_of_auto_jobs_is_spread_evenly_over_the_printers(client: Client) -> None:
    # GIVEN three healthy printers with empty queues
    for printer_id in PRINTERS:
        await _beat(client, printer_id)
    # WHEN 30 kiosks submit `auto` jobs at the same moment
    bodies = [job_body("auto") for _ in range(30)]
    answers = await asyncio.gather(*(flows.submit(client, **body) for body in bodies))
    # THEN each printer got 10 (each accept saw the jobs accepted before it)
    assert Counter(answer["printer_id"] for answer in answers) == dict.fromkeys(PRINTERS, 10)
    for printer_id in PRINTERS:
        assert len(await flows.queue_ids(client, printer_id)) == 10


async def test_ties_go_round_the_printers_when_their_queues_stay_empty(client: Client) -> None:
    # GIVEN three healthy printers whose agents lease each job as it comes
    for printer_id in PRINTERS:
        await _beat(client, printer_id)
    chosen = []
    for _ in range(9):
        printer_id = (await flows.submit(client, **job_body("auto")))["printer_id"]
        chosen.append(printer_id)
        await flows.lease_one(client, printer_id)
    # THEN no printer is favoured by its name
    assert Counter(chosen) == dict.fromkeys(PRINTERS, 3)


async def test_with_no_fit_printer_the_job_is_refused_and_nothing_is_kept(
    client: Client,
) -> None:
    # GIVEN only a degraded (paper low) printer: it takes no new routed work
    await _beat(client, "printer-a", paper="low")
    body = job_body("auto")
    refused = await flows.submit(client, status=503, **body)
    flows.assert_error_shape(refused, "no_printer_available")
    # WHEN a healthy printer appears and the kiosk retries with the same key
    await _beat(client, "printer-b")
    accepted = await flows.submit(client, status=201, **body)
    # THEN it is accepted as new (the refusal claimed nothing) on the healthy printer
    assert accepted["printer_id"] == "printer-b" and accepted["duplicate"] is False


async def test_a_retried_auto_job_is_a_duplicate_even_when_no_printer_is_fit_now(
    client: Client,
) -> None:
    await _beat(client, "printer-a")
    body = job_body("auto")
    first = await flows.submit(client, status=201, **body)
    # WHEN its only printer jams and the kiosk, which lost the answer, retries
    await _beat(client, "printer-a", jammed=True)
    again = await flows.submit(client, status=200, **body)
    # THEN the answer is the job it already has, not "no printer available"
    assert again["job_id"] == first["job_id"] and again["duplicate"] is True


async def test_a_configured_pool_routes_only_to_its_members(make_client: MakeClient) -> None:
    client = await make_client(pools={"front": ["printer-b", "printer-c"]})
    for printer_id in PRINTERS:
        await _beat(client, printer_id)
    answers = [await flows.submit(client, **job_body("pool:front")) for _ in range(4)]
    assert Counter(answer["printer_id"] for answer in answers) == {"printer-b": 2, "printer-c": 2}


async def test_jobs_an_agent_has_leased_ahead_count_as_its_printers_load(client: Client) -> None:
    # GIVEN two printers with two jobs each, and printer-a's agent has fetched both
    # ahead (leased, not started): its queue is empty, printer-b's is not
    for printer_id in PRINTERS[:2]:
        await _beat(client, printer_id)
    first = [await flows.submit(client, **job_body("auto")) for _ in range(4)]
    assert Counter(answer["printer_id"] for answer in first) == dict.fromkeys(PRINTERS[:2], 2)
    assert len(await flows.lease(client, "printer-a", max_jobs=2)) == 2
    # WHEN two more `auto` jobs come
    more = [await flows.submit(client, **job_body("auto")) for _ in range(2)]
    # THEN they are spread as if nothing had moved (before, both went to printer-a)
    assert Counter(answer["printer_id"] for answer in more) == dict.fromkeys(PRINTERS[:2], 1)


async def test_a_leased_job_leaves_its_printers_load_by_every_way_out(
    make_client: MakeClient, redis: Redis, settings: CoordinatorSettings
) -> None:
    # Every way a job leaves `leased`: started, acked failed, canceled, lease expired.
    client = await make_client(lease_ttl_s=1.0, lease_scan_interval_s=0.1)
    await _beat(client, "printer-a")
    leased_set = VenueKeys(settings.venue).leased("printer-a")

    async def leased_ids() -> set[str]:
        return {member.decode() for member in await redis.smembers(leased_set)}

    jobs = [await flows.submit(client, **job_body("printer-a")) for _ in range(4)]
    held = await flows.lease(client, "printer-a", max_jobs=3)
    assert await leased_ids() == {job["job_id"] for job in held}
    started, failed, canceled = held
    await flows.start(client, started["job_id"], started["lease_id"])
    await flows.ack(client, failed["job_id"], failed["lease_id"], result="failed", error="x")
    await flows.cancel(client, canceled["job_id"])
    assert await leased_ids() == set()
    # AND a lease that expires before its start
    (expiring,) = await flows.lease(client, "printer-a", max_jobs=1)
    assert expiring["job_id"] in {job["job_id"] for job in jobs}
    assert await leased_ids() == {expiring["job_id"]}

    async def returned() -> bool:
        return expiring["job_id"] in await flows.queue_ids(client, "printer-a")

    await wait_for(returned, timeout_s=10)
    assert await leased_ids() == set()


async def test_stale_leased_members_left_by_an_older_coordinator_are_repaired(
    client: Client, redis: Redis, settings: CoordinatorSettings
) -> None:
    # GIVEN a job printer-a's agent really holds, and one an older coordinator
    # started (or canceled) without taking it out of the leased set
    keys = VenueKeys(settings.venue)
    await _beat(client, "printer-a")
    await _beat(client, "printer-b")
    held = await flows.submit(client, **job_body("printer-a"))
    gone = await flows.submit(client, **job_body("printer-a"))
    await flows.lease(client, "printer-a", max_jobs=2)
    await flows.cancel(client, gone["job_id"])
    await redis.sadd(keys.leased("printer-a"), gone["job_id"])  # what the old release left
    # WHEN the repair runs
    store = Store(redis, settings)
    assert await repair_leased_sets_once(store) == 1
    # THEN only the job still leased counts, and routing sees printer-a as it is
    assert await redis.smembers(keys.leased("printer-a")) == {held["job_id"].encode()}
    assert await repair_leased_sets_once(store) == 0
