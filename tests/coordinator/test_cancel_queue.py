"""Canceling all of one printer's waiting jobs (`POST /v1/queues/{printer_id}/cancel`,
as `cancel -a`): every job queued on it, or leased by its agent and not yet started;
never a job it is printing, nor another printer's."""

from __future__ import annotations

from typing import Any

from aiohttp.test_utils import TestClient

from tests.coordinator import flows
from tests.coordinator.conftest import MakeClient
from tests.helpers import job_body

Client = TestClient[Any, Any]


async def cancel_queue(client: Client, printer_id: str, status: int = 200) -> Any:
    response = await client.post(f"/v1/queues/{printer_id}/cancel", headers=flows.OPERATOR)
    return await flows.expect(response, status)


async def test_every_waiting_job_of_the_printer_is_canceled_and_no_other(client: Client) -> None:
    # GIVEN printer-a printing one job, its agent holding a second, three more queued,
    # and a job on printer-b
    await flows.heartbeat(client, "printer-a")
    ids = [(await flows.submit(client))["job_id"] for _ in range(5)]
    printing = await flows.lease_one(client)
    await flows.start(client, printing["job_id"], printing["lease_id"])
    prefetched = await flows.lease_one(client)
    other = (await flows.submit(client, **job_body("printer-b")))["job_id"]
    # WHEN an operator cancels all of printer-a's jobs
    answer = await cancel_queue(client, "printer-a")
    # THEN the leased one and the queued ones are canceled, those in line in print order
    assert answer == {"printer_id": "printer-a", "canceled": ids[1:]}
    assert await flows.queue_ids(client, "printer-a") == []
    for job_id in ids[1:]:
        job = await flows.get_job(client, job_id)
        assert job["state"] == "canceled"
        assert job["history"][-1]["reason"] == (
            "canceled by operator:ops with all of printer-a's waiting jobs"
        )
    # AND the prefetched one may not start
    refused = await flows.start(client, prefetched["job_id"], prefetched["lease_id"], status=409)
    assert refused["reason"] == "canceled"
    # AND the job being printed goes on, as does printer-b's job
    acked = await flows.ack(client, printing["job_id"], printing["lease_id"])
    assert acked["state"] == "printed"
    assert await flows.queue_ids(client, "printer-b") == [other]
    # AND the reports count them canceled, every job accounted for
    report = await flows.expect(await client.get("/v1/reconcile", headers=flows.OPERATOR), 200)
    assert (report["counts"]["canceled"], report["counts"]["unaccounted"]) == (4, 0)


async def test_an_empty_or_unknown_queue_cancels_nothing(client: Client) -> None:
    assert await cancel_queue(client, "printer-c") == {"printer_id": "printer-c", "canceled": []}
    flows.assert_error_shape(await cancel_queue(client, "printer_C", 404), "not_found")


async def test_a_queue_longer_than_one_batch_is_canceled_whole(make_client: MakeClient) -> None:
    # GIVEN more jobs than one script call cancels (store/waiting.py: CANCEL_BATCH)
    client = await make_client(high_water_mark=500)
    ids = [(await flows.submit(client))["job_id"] for _ in range(450)]
    # WHEN they are canceled THEN all of them are, in print order
    assert (await cancel_queue(client, "printer-a"))["canceled"] == ids
    assert await flows.queue_ids(client, "printer-a") == []
