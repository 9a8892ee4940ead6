"""Jobs for a pool or `auto`: the accept script picks the printer in the same
atomic step as the enqueue, so a burst of kiosks spreads over the printers."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from aiohttp.test_utils import TestClient

from tests.coordinator import flows
from tests.coordinator.conftest import MakeClient
from tests.helpers import job_body

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
