"""Acceptance: validation, the dedupe gate, and backpressure (invariants 2 and 4)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiohttp.test_utils import TestClient
from redis.asyncio import Redis

from badgeline.coordinator.app import create_app
from badgeline.coordinator.config import CoordinatorSettings
from badgeline.coordinator.store.connection import connect
from tests.conftest import KIOSK_TOKEN, OPERATOR_TOKEN, auth
from tests.coordinator import flows
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
    assert [j["job_id"] for j in listed["items"]] == [created["job_id"]]


# --------------------------------------------------------------------------- bad input


async def test_whitespace_around_fields_is_stripped_before_dedupe(
    client: TestClient[Any, Any],
) -> None:
    # GIVEN a job whose fields arrive with stray spaces from a scanner
    body = job_body(attendee_id="att_strip")
    padded = {k: f"  {v}\t" if isinstance(v, str) else v for k, v in body.items()}
    # WHEN it is submitted
    created = await flows.expect(await client.post("/v1/jobs", json=padded, headers=KIOSK), 201)
    # THEN the stored job carries the stripped values
    job = await flows.get_job(client, created["job_id"])
    for name in ("attendee_id", "badge_pdf_ref", "printer_target", "idempotency_key"):
        assert job[name] == body[name]
    # AND the clean form of the same job is the same job, not a conflict
    again = await flows.expect(await client.post("/v1/jobs", json=body, headers=KIOSK), 200)
    assert again["job_id"] == created["job_id"] and again["duplicate"] is True


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("attendee_id", "att"),  # shorter than 4
        ("attendee_id", "a" * 49),  # longer than 48
        ("attendee_id", "att 1234"),  # inner space
        ("attendee_id", "   "),  # only whitespace
        ("badge_pdf_ref", "https://badges.example/att.png"),  # not a PDF
        ("badge_pdf_ref", "https://badges.example/pdf"),
        ("badge_pdf_ref", "ftp://badges.example/att.pdf"),  # scheme not allowed
        ("badge_pdf_ref", "att.pdf"),  # no scheme
        ("badge_pdf_ref", "https://badges.example/" + "a" * 500 + ".pdf"),  # over 512
        ("badge_pdf_ref", ""),
        ("badge_pdf_ref", "artifact://<sha256>.pdf"),  # the docs' placeholder, literally
        ("badge_pdf_ref", "artifact://" + "A" * 64 + ".pdf"),  # names are lowercase hex
        ("badge_pdf_ref", "artifact://" + "a" * 63 + ".pdf"),
        ("badge_pdf_ref", "file:///badges/x%00.pdf"),  # an encoded NUL names no file
        ("badge_pdf_ref", "file:///badges/x\x00.pdf"),
        ("badge_pdf_ref", "https://badges.example/a%0d%0aSet-Cookie:x.pdf"),  # CR/LF
        ("badge_pdf_ref", "https://badges.example/a\tb.pdf"),
        ("badge_pdf_ref", "file:///badges/../etc/x.pdf"),  # file refs: no '..'
        ("badge_pdf_ref", "file:///badges/%2e%2e/x.pdf"),
        ("badge_pdf_ref", "file://fileserver/share/x.pdf"),  # file refs are local
        ("printer_target", "printer-A"),
        ("printer_target", "printer-"),
        ("printer_target", "printer-" + "a" * 17),
        ("printer_target", "pool:"),
        ("printer_target", "lobby"),
        ("priority", -1),
        ("priority", 1001),
        ("priority", "5"),  # strict: no coercion from strings
        ("priority", 5.0),  # nor from floats
        ("priority", True),  # nor from booleans
        ("priority", None),
        ("attendee_id", 12345678),
        ("idempotency_key", "short"),
        ("idempotency_key", "has a space"),
        ("idempotency_key", "k" * 81),
        ("idempotency_key", ["scan-12345678"]),
    ],
)
async def test_an_invalid_field_is_a_422_naming_it_and_writes_nothing(
    client: TestClient[Any, Any], redis: Redis, settings: CoordinatorSettings,
    field: str, value: Any,
) -> None:  # fmt: skip
    # GIVEN a venue with one accepted job
    await flows.submit(client)
    before = await flows.venue_snapshot(redis, settings.venue)
    # WHEN a job with one bad field is submitted
    response = await client.post("/v1/jobs", json=job_body(**{field: value}), headers=KIOSK)
    # THEN it is rejected in the error shape with the field's location
    body = await flows.expect(response, 422)
    flows.assert_error_shape(body, "validation_failed")
    assert [f["loc"] for f in body["error"]["fields"]] == [[field]]
    # AND nothing was written to Redis
    assert await flows.venue_snapshot(redis, settings.venue) == before


@pytest.mark.parametrize(
    "missing", ["attendee_id", "badge_pdf_ref", "printer_target", "idempotency_key"]
)
async def test_a_missing_field_is_named(client: TestClient[Any, Any], missing: str) -> None:
    body = job_body()
    del body[missing]
    response = await client.post("/v1/jobs", json=body, headers=KIOSK)
    error = await flows.expect(response, 422)
    flows.assert_error_shape(error, "validation_failed")
    assert error["error"]["fields"][0]["loc"] == [missing]


async def test_priority_bounds_are_inclusive_and_default_is_100(
    client: TestClient[Any, Any],
) -> None:
    low = await flows.submit(client, priority=0)
    high = await flows.submit(client, priority=1000)
    body = job_body()
    del body["priority"]
    default = await flows.expect(await client.post("/v1/jobs", json=body, headers=KIOSK), 201)
    assert (await flows.get_job(client, low["job_id"]))["priority"] == 0
    assert (await flows.get_job(client, high["job_id"]))["priority"] == 1000
    assert (await flows.get_job(client, default["job_id"]))["priority"] == 100


async def test_unknown_fields_are_rejected(
    client: TestClient[Any, Any], redis: Redis, settings: CoordinatorSettings
) -> None:
    # WHEN a kiosk sends a field the contract does not have
    response = await client.post("/v1/jobs", json=job_body(colour="red"), headers=KIOSK)
    # THEN it is named, and nothing is written
    body = await flows.expect(response, 422)
    flows.assert_error_shape(body, "validation_failed")
    assert body["error"]["fields"][0]["loc"] == ["colour"]
    assert await flows.venue_snapshot(redis, settings.venue) == {}


@pytest.mark.parametrize(
    ("raw", "status", "code"),
    [
        (b'{"attendee_id": "att_1234",', 400, "malformed_json"),
        (b"not json at all", 400, "malformed_json"),
        (b'{"attendee_id": "\xff\xfe"}', 400, "malformed_json"),  # not UTF-8
        (b"[" * 5000 + b"]" * 5000, 400, "malformed_json"),  # nested past the parser's limit
        (b"", 422, "validation_failed"),  # empty body: every required field is missing
        (b"   ", 422, "validation_failed"),
        (b"[]", 422, "validation_failed"),
        (b"null", 422, "validation_failed"),
        (b'"a job"', 422, "validation_failed"),
    ],
)
async def test_a_body_that_is_not_a_job_object_is_refused_in_the_error_shape(
    client: TestClient[Any, Any], redis: Redis, settings: CoordinatorSettings,
    raw: bytes, status: int, code: str,
) -> None:  # fmt: skip
    headers = {**KIOSK, "Content-Type": "application/json"}
    response = await client.post("/v1/jobs", data=raw, headers=headers)
    flows.assert_error_shape(await flows.expect(response, status), code)
    assert await flows.venue_snapshot(redis, settings.venue) == {}


async def test_an_oversized_body_is_a_413_in_the_error_shape(
    client: TestClient[Any, Any], redis: Redis, settings: CoordinatorSettings
) -> None:
    # GIVEN a body just over the configured limit (valid JSON, padded by an unknown field)
    body = job_body(padding="x" * settings.max_body_bytes)
    # WHEN it is submitted
    response = await client.post("/v1/jobs", json=body, headers=KIOSK)
    # THEN the coordinator refuses it without reading it as a job
    flows.assert_error_shape(await flows.expect(response, 413), "body_too_large")
    assert await flows.venue_snapshot(redis, settings.venue) == {}


async def test_a_conflict_writes_nothing(
    client: TestClient[Any, Any], redis: Redis, settings: CoordinatorSettings
) -> None:
    body = job_body()
    await flows.expect(await client.post("/v1/jobs", json=body, headers=KIOSK), 201)
    before = await flows.venue_snapshot(redis, settings.venue)
    response = await client.post("/v1/jobs", json=dict(body, priority=7), headers=KIOSK)
    flows.assert_error_shape(await flows.expect(response, 409), "idempotency_conflict")
    assert await flows.venue_snapshot(redis, settings.venue) == before


@pytest.mark.parametrize("job_id", ["job_0000000000000000", "nope", "{x}", "x" * 300])
async def test_looking_up_an_unknown_job_is_a_404(
    client: TestClient[Any, Any], job_id: str
) -> None:
    response = await client.get(f"/v1/jobs/{job_id}", headers=KIOSK)
    flows.assert_error_shape(await flows.expect(response, 404), "not_found")


async def test_an_id_that_names_another_key_of_the_job_is_a_404_not_a_500(
    client: TestClient[Any, Any],
) -> None:
    # GIVEN a job (its history list and prints set live under job:<id>:…)
    created = await flows.submit(client)
    for suffix in (":history", ":prints"):
        job_id = created["job_id"] + suffix
        # WHEN a caller names one of those keys as a job id
        for method, path, headers in [
            ("GET", f"/v1/jobs/{job_id}", KIOSK),
            ("POST", f"/v1/jobs/{job_id}/cancel", KIOSK),
            ("POST", f"/v1/agents/printer-a/jobs/{job_id}/start", flows.agent()),
            ("POST", f"/v1/agents/printer-a/jobs/{job_id}/ack", flows.agent()),
        ]:
            body = {"lease_id": "lease_x-1"} if "agents" in path else None
            if path.endswith("/ack"):
                body = {"lease_id": "lease_x-1", "result": "printed"}
            response = await client.request(method, path, json=body, headers=headers)
            # THEN it is simply not a job
            flows.assert_error_shape(await flows.expect(response, 404), "not_found")


async def test_list_by_attendee_validates_its_query(client: TestClient[Any, Any]) -> None:
    for query in ("", "?attendee_id=a%20b", "?attendee_id=att_1234&extra=1"):
        response = await client.get(f"/v1/jobs{query}", headers=KIOSK)
        flows.assert_error_shape(await flows.expect(response, 422), "validation_failed")


async def test_unknown_paths_and_methods_answer_in_the_error_shape(
    client: TestClient[Any, Any],
) -> None:
    flows.assert_error_shape(
        await flows.expect(await client.get("/v1/nothing-here", headers=KIOSK), 404), "not_found"
    )
    response = await client.delete("/v1/jobs", headers=KIOSK)
    flows.assert_error_shape(await flows.expect(response, 405), "method_not_allowed")
    # a 405 says which methods the path has (RFC 9110 requires Allow)
    assert set(response.headers["Allow"].split(",")) == {"GET", "HEAD", "POST"}


async def test_more_requests_in_flight_than_redis_connections_wait_instead_of_failing(
    settings: CoordinatorSettings, aiohttp_client: Any
) -> None:
    # A few hundred printers and kiosks put more commands in flight than the pool
    # holds; redis-py's default pool then fails them ("Too many connections", 503).
    small = settings.model_copy(update={"redis_max_connections": 8})
    redis, _ = connect(small, small.redis_url)
    try:
        client: TestClient[Any, Any] = await aiohttp_client(create_app(small, redis))
        responses = await asyncio.gather(
            *[client.post("/v1/jobs", json=job_body(), headers=KIOSK) for _ in range(120)]
        )
        assert sorted({r.status for r in responses}) == [201]
        await client.close()
    finally:
        await redis.aclose()
