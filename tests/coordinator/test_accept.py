"""Acceptance: validation, the dedupe gate, and backpressure (invariants 2 and 4)."""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp.test_utils import TestClient

from tests.conftest import KIOSK_TOKEN, OPERATOR_TOKEN, auth
from tests.helpers import job_body

KIOSK = auth(KIOSK_TOKEN)


async def test_accepts_a_job_and_reports_its_queue_position(client: TestClient[Any, Any]) -> None:
    # GIVEN two jobs for one printer
    first = await client.post("/v1/jobs", json=job_body(), headers=KIOSK)
    second = await client.post("/v1/jobs", json=job_body(), headers=KIOSK)
    # THEN both are queued, the second behind the first
    assert first.status == 201 and second.status == 201
    body = await second.json()
    assert body["state"] == "queued" and body["printer_id"] == "printer-a"
    assert body["position"] == 1 and body["duplicate"] is False
    assert second.headers["X-Correlation-ID"] == body["correlation_id"]


async def test_repeat_with_same_payload_returns_the_same_job(client: TestClient[Any, Any]) -> None:
    body = job_body()
    first = await (await client.post("/v1/jobs", json=body, headers=KIOSK)).json()
    # WHEN the scanner double-taps and the kiosk sends the same job again
    again = await client.post("/v1/jobs", json=body, headers=KIOSK)
    # THEN it is the same job, flagged as a duplicate, with 200
    assert again.status == 200
    repeat = await again.json()
    assert repeat["job_id"] == first["job_id"] and repeat["duplicate"] is True


async def test_same_key_with_other_payload_is_a_conflict(client: TestClient[Any, Any]) -> None:
    body = job_body()
    await client.post("/v1/jobs", json=body, headers=KIOSK)
    conflicting = dict(body, priority=5)
    response = await client.post("/v1/jobs", json=conflicting, headers=KIOSK)
    assert response.status == 409
    assert (await response.json())["error"]["code"] == "idempotency_conflict"
    depth = await client.get("/v1/queues/printer-a", headers=auth(OPERATOR_TOKEN))
    assert (await depth.json())["depth"] == 1


async def test_fifty_concurrent_submits_with_one_key_make_one_job(
    client: TestClient[Any, Any],
) -> None:
    body = job_body()
    responses = await asyncio.gather(
        *[client.post("/v1/jobs", json=body, headers=KIOSK) for _ in range(50)]
    )
    statuses = sorted(r.status for r in responses)
    job_ids = {(await r.json())["job_id"] for r in responses}
    assert statuses == [200] * 49 + [201]
    assert len(job_ids) == 1
    depth = await client.get("/v1/queues/printer-a", headers=auth(OPERATOR_TOKEN))
    assert (await depth.json())["depth"] == 1


async def test_job_history_and_lookup_by_attendee(client: TestClient[Any, Any]) -> None:
    body = job_body(attendee_id="att_history")
    created = await (await client.post("/v1/jobs", json=body, headers=KIOSK)).json()
    job = await (await client.get(f"/v1/jobs/{created['job_id']}", headers=KIOSK)).json()
    assert job["state"] == "queued" and job["attempts"] == 0
    assert job["history"][0]["from"] is None and job["history"][0]["to"] == "queued"
    assert job["history"][0]["actor"] == "kiosk:kiosk-1"
    listed = await (await client.get("/v1/jobs?attendee_id=att_history", headers=KIOSK)).json()
    assert [j["job_id"] for j in listed["jobs"]] == [created["job_id"]]
