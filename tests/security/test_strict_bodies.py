"""Strict request bodies: every JSON route takes `application/json` only (415), a key
twice in one object is a 422 naming it, and a declared Content-Length over the route's
limit is a 413 answered before the body is read. Over real sockets, against real Redis."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestClient
from redis.asyncio import Redis

from badgeline.coordinator.config import CoordinatorSettings
from tests.conftest import KIOSK_TOKEN, OPERATOR_TOKEN, agent_token, auth
from tests.coordinator import flows
from tests.helpers import job_body

Client = TestClient[Any, Any]
TOKENS = {"kiosk": KIOSK_TOKEN, "operator": OPERATOR_TOKEN, "agent": agent_token("printer-a")}
TEN_GB = 10 * 1024**3
# A well-shaped id no job has: the body is refused before the job is looked up.
SOME_JOB = "job_00000000deadbeef"


async def _json_operations(client: Client) -> list[tuple[str, str, str, dict[str, Any]]]:
    """(method, path with ids filled in, token, documented answers) of every operation
    the document says takes a JSON body."""
    document = await flows.expect(await client.get("/v1/openapi.json"), 200)
    found = []
    for template, operations in document["paths"].items():
        for method, operation in operations.items():
            if "application/json" not in operation.get("requestBody", {}).get("content", {}):
                continue
            roles = operation.get("description", "").removeprefix("Roles: ").split(", ")
            token = TOKENS.get(roles[0], "") if roles != [""] else ""
            path = template.replace("{printer_id}", "printer-a").replace("{job_id}", SOME_JOB)
            found.append((method, path, token, operation["responses"]))
    return found


async def _raw_exchange(client: Client, head: str, timeout_s: float = 5.0) -> tuple[str, Any]:
    """Send a request head and none of its body on a fresh connection; the answer's
    status line and JSON body, which must arrive within `timeout_s`."""
    reader, writer = await asyncio.open_connection(client.host, client.port)
    try:
        writer.write(head.encode("latin-1"))
        await writer.drain()
        async with asyncio.timeout(timeout_s):
            answer_head = await reader.readuntil(b"\r\n\r\n")
            status_line, *header_lines = answer_head.decode("latin-1").split("\r\n")
            headers = dict(line.split(": ", 1) for line in header_lines if line)
            body = await reader.readexactly(int(headers["Content-Length"]))
    finally:
        writer.close()
    # No keep-alive after a refused body: the rest of it is not wanted.
    assert headers.get("Connection") == "close", headers
    return status_line, json.loads(body)


async def test_every_json_route_refuses_a_body_of_another_media_type(
    client: Client, redis: Redis, settings: CoordinatorSettings
) -> None:
    # GIVEN every operation the document says takes JSON
    operations = await _json_operations(client)
    assert len(operations) >= 10, operations
    before = await flows.venue_snapshot(redis, settings.venue)
    for method, path, token, documented in operations:
        for content_type in ("text/plain", "application/x-www-form-urlencoded",
                             "multipart/form-data; boundary=x", "application/json; charset=latin-1",
                             "application/octet-stream"):  # fmt: skip
            # WHEN a caller allowed to call it sends a JSON text declared as something else
            headers = {**(auth(token) if token else {}), "Content-Type": content_type}
            response = await client.request(method, path, data=b"{}", headers=headers)
            # THEN it is a 415 in the error shape, as the document says it may be
            body = await flows.expect(response, 415)
            flows.assert_error_shape(body, "unsupported_media_type")
        assert "415" in documented, (method, path)
    # AND nothing was written (but the attempts of the enrolment route, spent by any call)
    after = await flows.venue_snapshot(redis, settings.venue)
    assert flows.without_attempts(after) == flows.without_attempts(before)
    # AND a call with no body at all needs no media type (a body of optional fields)
    response = await client.post("/v1/printers/printer-a/pause", headers=flows.OPERATOR)
    assert (await flows.expect(response, 200))["paused"] is True


async def test_a_submission_is_taken_as_json_only(client: Client) -> None:
    # GIVEN the same job sent as a multipart form, as a browser's form would send it
    form = aiohttp.FormData()
    form.add_field("job", json.dumps(job_body()), content_type="application/json")
    # WHEN it is submitted, THEN it is a 415, not a job
    response = await client.post("/v1/jobs", data=form, headers=flows.KIOSK)
    flows.assert_error_shape(await flows.expect(response, 415), "unsupported_media_type")
    # AND as JSON, with or without a UTF-8 charset, in any case, it is taken
    for content_type in ("application/json", "application/json; charset=utf-8",
                         "Application/JSON; charset=UTF-8"):  # fmt: skip
        headers = {**flows.KIOSK, "Content-Type": content_type}
        response = await client.post("/v1/jobs", data=json.dumps(job_body()).encode(),
                                     headers=headers)  # fmt: skip
        await flows.expect(response, 201)


DUPLICATES = [
    ("/v1/jobs", flows.KIOSK,
     '{"attendee_id": "att_1234", "priority": 1, "priority": 900, "badge_pdf_ref": '
     '"https://badges.example/a.pdf", "printer_target": "printer-a", '
     '"idempotency_key": "scan-duplicate-1"}', ["priority"]),
    ("/v1/agents/printer-a/heartbeat", flows.agent(),
     '{"agent_id": "pi", "version": "t", "health": {"reachable": true, "paper": "ok", '
     '"paper": "out"}}', ["health", "paper"]),
    ("/v1/dead-letters/redrive", flows.OPERATOR, '{"ids": [{"a": 1, "a": 2}]}', ["ids", 0, "a"]),
]  # fmt: skip


async def _post_raw(client: Client, path: str, headers: dict[str, str], raw: str) -> Any:
    return await client.post(path, data=raw.encode(),
                             headers={**headers, "Content-Type": "application/json"})  # fmt: skip


async def test_a_key_twice_in_one_object_is_a_422_naming_it(
    client: Client, redis: Redis, settings: CoordinatorSettings
) -> None:
    before = await flows.venue_snapshot(redis, settings.venue)
    for path, headers, raw, loc in DUPLICATES:
        # WHEN a body has one key twice in one object
        response = await _post_raw(client, path, headers, raw)
        # THEN it is a 422 whose fields name that key
        body = await flows.expect(response, 422)
        flows.assert_error_shape(body, "validation_failed")
        assert body["error"]["fields"] == [{"loc": loc, "msg": "duplicate key"}], path
        assert repr(".".join(str(part) for part in loc)) in body["error"]["message"]
    # AND nothing was written
    assert await flows.venue_snapshot(redis, settings.venue) == before
    # AND one key in two objects is no duplicate
    raw = ('{"agent_id": "pi", "version": "t", "health": {"reachable": true, "detail": null}, '
           '"journal": {"reachable": 1}}')  # fmt: skip
    await flows.expect(await _post_raw(client, "/v1/agents/printer-a/heartbeat", flows.agent(),
                                       raw), 200)  # fmt: skip


@pytest.mark.parametrize(
    ("request_line", "token", "extra"),
    [
        ("POST /v1/jobs", KIOSK_TOKEN, "Content-Type: application/json\r\n"),
        ("POST /v1/enrol", None, "Content-Type: application/json\r\n"),
        (f"PUT /v1/artifacts/{'0' * 64}.pdf", KIOSK_TOKEN, "Content-Type: application/pdf\r\n"),
        ("POST /dashboard/login", None, "Content-Type: application/x-www-form-urlencoded\r\n"),
    ],
)  # fmt: skip
async def test_a_declared_length_over_the_limit_is_refused_before_the_body_is_read(
    client: Client, request_line: str, token: str | None, extra: str
) -> None:
    # GIVEN a request that declares a 10 GB body and sends none of it
    authorization = f"Authorization: Bearer {token}\r\n" if token else ""
    head = (f"{request_line} HTTP/1.1\r\nHost: coordinator\r\n{authorization}{extra}"
            f"Content-Length: {TEN_GB}\r\n\r\n")  # fmt: skip
    # WHEN it is sent, THEN the answer is a 413 at once, in the error shape
    status_line, body = await _raw_exchange(client, head)
    assert status_line.endswith(" 413 Request Entity Too Large"), status_line
    flows.assert_error_shape(body, "body_too_large")
    assert str(TEN_GB) in body["error"]["message"]


async def test_an_artifact_may_declare_more_than_a_json_route(
    client: Client, settings: CoordinatorSettings
) -> None:
    # GIVEN a length over max_body_bytes and within artifact_max_bytes
    declared = settings.max_body_bytes * 2
    assert declared < settings.artifact_max_bytes
    # WHEN a JSON route is sent it, THEN 413 at once
    head = (f"POST /v1/jobs HTTP/1.1\r\nHost: c\r\nAuthorization: Bearer {KIOSK_TOKEN}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {declared}\r\n\r\n")  # fmt: skip
    assert (await _raw_exchange(client, head))[0].endswith(" 413 Request Entity Too Large")
    # AND an artifact upload of that length is read: its body decides (a 415, not a PDF)
    body = b"x" * declared
    headers = {**flows.KIOSK, "Content-Type": "application/pdf"}
    response = await client.put(f"/v1/artifacts/{'0' * 64}.pdf", data=body, headers=headers)
    flows.assert_error_shape(await flows.expect(response, 415), "unsupported_media_type")
