"""The auth matrix: every core path x every kind of caller.

No token or an unknown token is 401; a known token of the wrong role, or an
agent token used for another printer, is 403; the right caller gets a 2xx. A
refused request never changes anything in Redis.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from aiohttp.test_utils import TestClient
from redis.asyncio import Redis

from badgeline.coordinator.config import CoordinatorSettings
from tests.conftest import KIOSK_TOKEN, OPERATOR_TOKEN, agent_token, auth
from tests.coordinator import flows
from tests.helpers import job_body

Client = TestClient[Any, Any]
CALLERS: dict[str, dict[str, str]] = {
    "no token": {},
    "unknown token": auth("not-a-token-anyone-was-given"),
    "kiosk": auth(KIOSK_TOKEN),
    "operator": auth(OPERATOR_TOKEN),
    "agent of printer-a": auth(agent_token("printer-a")),
    "agent of printer-b": auth(agent_token("printer-b")),
}
ANYONE = frozenset(CALLERS)
HEARTBEAT = {"agent_id": "agent-1", "version": "0.1.0", "health": {"reachable": True}}


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    body: Any = None


Setup = Callable[[Client], Awaitable[Call]]


async def _submit(client: Client) -> Call:
    return Call("POST", "/v1/jobs", job_body())


async def _get(client: Client) -> Call:
    return Call("GET", f"/v1/jobs/{(await flows.submit(client))['job_id']}")


async def _list(client: Client) -> Call:
    await flows.submit(client, attendee_id="att_matrix")
    return Call("GET", "/v1/jobs?attendee_id=att_matrix")


async def _cancel(client: Client) -> Call:
    return Call("POST", f"/v1/jobs/{(await flows.submit(client))['job_id']}/cancel")


async def _heartbeat(client: Client) -> Call:
    return Call("POST", "/v1/agents/printer-a/heartbeat", HEARTBEAT)


async def _lease(client: Client) -> Call:
    await flows.submit(client)
    return Call("POST", "/v1/agents/printer-a/lease?wait=0&max=1")


async def _start(client: Client) -> Call:
    await flows.submit(client)
    leased = await flows.lease_one(client)
    path = f"/v1/agents/printer-a/jobs/{leased['job_id']}/start"
    return Call("POST", path, {"lease_id": leased["lease_id"]})


async def _ack(client: Client) -> Call:
    await flows.submit(client)
    leased = await flows.lease_one(client)
    await flows.start(client, leased["job_id"], leased["lease_id"])
    path = f"/v1/agents/printer-a/jobs/{leased['job_id']}/ack"
    return Call("POST", path, {"lease_id": leased["lease_id"], "result": "printed"})


async def _dead_letters(client: Client) -> Call:
    return Call("GET", "/v1/dead-letters")


async def _redrive(client: Client) -> Call:
    return Call("POST", "/v1/dead-letters/redrive", {"ids": []})


async def _queue(client: Client) -> Call:
    await flows.submit(client)
    return Call("GET", "/v1/queues/printer-a")


async def _healthz(client: Client) -> Call:
    return Call("GET", "/healthz")


async def _openapi(client: Client) -> Call:
    return Call("GET", "/v1/openapi.json")


# path -> (how to set it up, who may call it)
MATRIX: dict[str, tuple[Setup, frozenset[str]]] = {
    "submit": (_submit, frozenset({"kiosk", "operator"})),
    "get job": (_get, frozenset({"kiosk", "operator"})),
    "list by attendee": (_list, frozenset({"kiosk", "operator"})),
    "cancel": (_cancel, frozenset({"kiosk", "operator"})),
    "heartbeat": (_heartbeat, frozenset({"agent of printer-a"})),
    "lease": (_lease, frozenset({"agent of printer-a"})),
    "start": (_start, frozenset({"agent of printer-a"})),
    "ack": (_ack, frozenset({"agent of printer-a"})),
    "dead letters": (_dead_letters, frozenset({"operator"})),
    "redrive": (_redrive, frozenset({"operator"})),
    "queue peek": (_queue, frozenset({"operator"})),
    "healthz": (_healthz, ANYONE),
    "openapi": (_openapi, ANYONE),
}


def _expected(caller: str, allowed: frozenset[str]) -> int | None:
    """None = a 2xx; otherwise the refusal status."""
    if caller in allowed:
        return None
    return 401 if caller in ("no token", "unknown token") else 403


@pytest.mark.parametrize("caller", list(CALLERS))
@pytest.mark.parametrize("operation", list(MATRIX))
async def test_auth_matrix(
    client: Client, redis: Redis, settings: CoordinatorSettings, operation: str, caller: str
) -> None:
    setup, allowed = MATRIX[operation]
    # GIVEN the state the call needs (a job, a lease, a grant …)
    call = await setup(client)
    before = await flows.venue_snapshot(redis, settings.venue)
    # WHEN this caller makes it
    response = await client.request(call.method, call.path, json=call.body,
                                    headers=CALLERS[caller])  # fmt: skip
    # THEN the right caller succeeds and everyone else is refused, changing nothing
    expected = _expected(caller, allowed)
    if expected is None:
        assert 200 <= response.status < 300, (response.status, await response.text())
        return
    body = await flows.expect(response, expected)
    flows.assert_error_shape(body, "unauthorized" if expected == 401 else "forbidden")
    if expected == 401:  # the challenge RFC 6750 requires, naming the scheme to use
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert await flows.venue_snapshot(redis, settings.venue) == before


@pytest.mark.parametrize(
    "authorization",
    [
        "",
        "Bearer",
        "Bearer ",
        f"Basic {KIOSK_TOKEN}",
        f"Bearer  {KIOSK_TOKEN}",
        f"Bearer {KIOSK_TOKEN}x",
        f"Bearer {OPERATOR_TOKEN[:-1]}",
    ],
)
async def test_a_malformed_or_near_miss_authorization_is_a_401(
    client: Client, authorization: str
) -> None:
    response = await client.post("/v1/jobs", json=job_body(),
                                 headers={"Authorization": authorization})  # fmt: skip
    flows.assert_error_shape(await flows.expect(response, 401), "unauthorized")


async def test_a_token_that_is_not_utf8_is_a_401_not_a_500(client: Client) -> None:
    # GIVEN a raw HTTP request whose bearer token is not valid UTF-8
    reader, writer = await asyncio.open_connection(client.host, client.port)
    writer.write(
        b"GET /v1/jobs/job_0000000000000000 HTTP/1.1\r\nHost: test\r\n"
        b"Authorization: Bearer \xff\xfe\xfd\r\nConnection: close\r\n\r\n"
    )
    await writer.drain()
    # WHEN the coordinator answers
    raw = await reader.read()
    writer.close()
    await writer.wait_closed()
    # THEN it is an ordinary 401
    status_line = raw.split(b"\r\n", 1)[0]
    assert status_line == b"HTTP/1.1 401 Unauthorized", raw[:300]
    assert b'"code": "unauthorized"' in raw


async def test_an_agent_path_with_a_malformed_printer_id_is_refused(client: Client) -> None:
    response = await client.post("/v1/agents/PRINTER-A/lease", headers=flows.agent())
    flows.assert_error_shape(await flows.expect(response, 404), "not_found")


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER"])
async def test_the_scheme_name_is_case_insensitive(client: Client, scheme: str) -> None:
    # RFC 9110 §11.1; some HTTP client libraries send "bearer".
    response = await client.post("/v1/jobs", json=job_body(),
                                 headers={"Authorization": f"{scheme} {KIOSK_TOKEN}"})  # fmt: skip
    await flows.expect(response, 201)
