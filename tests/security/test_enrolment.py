"""Enrolment codes: single-use, expiring, bound to one printer; the agent token
they buy works like a configured one, and Redis only ever sees digests."""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any

import pytest
from aiohttp.test_utils import TestClient
from redis.asyncio import Redis

from badgeline.coordinator.config import CoordinatorSettings
from badgeline.coordinator.store.keys import VenueKeys
from tests.conftest import auth
from tests.coordinator import flows
from tests.coordinator.conftest import MakeClient
from tests.coordinator.test_auth import HEARTBEAT
from tests.helpers import wait_for
from tests.security import steps

Client = TestClient[Any, Any]


async def _redis_now_s(redis: Redis) -> float:
    seconds, micros = await redis.time()
    return float(seconds) + micros / 1e6


async def test_an_operator_code_is_stored_only_as_its_hash(
    client: Client, redis: Redis, settings: CoordinatorSettings
) -> None:
    # GIVEN the Redis clock before and after the request
    before = await _redis_now_s(redis)
    # WHEN an operator asks for a code for printer-a without a ttl
    issued = await steps.create_code(client, "printer-a")
    after = await _redis_now_s(redis)
    # THEN it expires enrolment_code_ttl_s from now, by the Redis clock
    assert issued["printer_id"] == "printer-a"
    ttl = settings.enrolment_code_ttl_s
    assert before + ttl - 0.001 <= issued["expires_at"] <= after + ttl + 0.001
    # AND Redis knows it only by its SHA-256
    digest = hashlib.sha256(issued["code"].encode()).hexdigest()
    assert await redis.exists(VenueKeys(settings.venue).enrolment_code(digest))
    dump = b"\n".join(await steps.redis_dump(redis, settings.venue))
    assert issued["code"].encode() not in dump


async def test_an_enrolled_token_works_for_its_printer_only(client: Client) -> None:
    # GIVEN an agent that exchanged a code for printer-a
    code = (await steps.create_code(client, "printer-a"))["code"]
    enrolled = await steps.enrol(client, code, "printer-a", "pi-7")
    assert enrolled["printer_id"] == "printer-a" and enrolled["agent_id"] == "pi-7"
    assert enrolled["replaced"] is False
    token = auth(enrolled["agent_token"])
    # WHEN it heartbeats and leases as printer-a
    beat = await client.post("/v1/agents/printer-a/heartbeat", json=HEARTBEAT, headers=token)
    lease = await client.post("/v1/agents/printer-a/lease?wait=0", headers=token)
    # THEN both work
    await flows.expect(beat, 200)
    await flows.expect(lease, 200)
    # AND another printer, or a kiosk path, is 403
    other = await client.post("/v1/agents/printer-b/heartbeat", json=HEARTBEAT, headers=token)
    flows.assert_error_shape(await flows.expect(other, 403), "forbidden")
    kiosk = await client.get("/v1/dead-letters", headers=token)
    flows.assert_error_shape(await flows.expect(kiosk, 403), "forbidden")


async def test_a_token_issued_by_one_replica_is_accepted_by_another(
    client: Client, make_client: MakeClient
) -> None:
    # GIVEN a token issued through one coordinator
    token = await steps.enrolled_token(client, "printer-a")
    # WHEN a second coordinator on the same Redis sees it
    other = await make_client()
    response = await other.post("/v1/agents/printer-a/heartbeat", json=HEARTBEAT,
                                headers=auth(token))  # fmt: skip
    # THEN it is accepted there too
    await flows.expect(response, 200)


async def test_a_code_is_single_use_and_a_reuse_writes_nothing(
    client: Client, redis: Redis, settings: CoordinatorSettings
) -> None:
    # GIVEN a code that has been exchanged once
    code = (await steps.create_code(client))["code"]
    await steps.enrol(client, code)
    before = await flows.venue_snapshot(redis, settings.venue)
    # WHEN it is presented again (by the same or another agent)
    again = await steps.enrol(client, code, agent_id="pi-other", status=410)
    # THEN it is refused as used, and nothing changed but the address's attempts
    flows.assert_error_shape(again, "enrolment_code_used")
    after = await flows.venue_snapshot(redis, settings.venue)
    assert flows.without_attempts(after) == flows.without_attempts(before)


async def test_agents_racing_with_one_code_get_one_token(make_client: MakeClient) -> None:
    # GIVEN one code and twenty agents presenting it at once (from one address, allowed
    # more attempts than that)
    client = await make_client(credential_attempts_burst=100)
    code = (await steps.create_code(client))["code"]
    body = {"code": code, "printer_id": "printer-a"}
    # WHEN they race
    responses = await asyncio.gather(*[
        client.post("/v1/enrol", json={**body, "agent_id": f"pi-{n}"}) for n in range(20)
    ])  # fmt: skip
    # THEN exactly one is given a token and every other one is told the code is used
    statuses = sorted(r.status for r in responses)
    assert statuses == [201] + [410] * 19, statuses
    for response in responses:
        if response.status == 410:
            flows.assert_error_shape(await response.json(), "enrolment_code_used")


async def test_an_expired_code_is_refused_as_expired(client: Client, redis: Redis) -> None:
    # GIVEN a code with a one-second life, and the Redis clock past its expiry
    issued = await steps.create_code(client, ttl_s=1)

    async def expired() -> bool:
        return await _redis_now_s(redis) > issued["expires_at"]

    await wait_for(expired, timeout_s=5)
    # WHEN an agent presents it
    body = await steps.enrol(client, issued["code"], status=410)
    # THEN it is refused as expired
    flows.assert_error_shape(body, "enrolment_code_expired")


async def test_an_unknown_code_is_forbidden(client: Client) -> None:
    body = await steps.enrol(client, "A" * 24, status=403)
    flows.assert_error_shape(body, "enrolment_code_invalid")


async def test_a_code_for_another_printer_is_refused_and_stays_usable(client: Client) -> None:
    # GIVEN a code for printer-b
    code = (await steps.create_code(client, "printer-b"))["code"]
    # WHEN an agent presents it as printer-a
    wrong = await steps.enrol(client, code, "printer-a", status=403)
    # THEN it is refused, and the code still enrols printer-b's agent
    flows.assert_error_shape(wrong, "enrolment_code_invalid")
    assert "another printer" in wrong["error"]["message"]
    await steps.enrol(client, code, "printer-b")


async def test_enrolling_an_agent_again_revokes_its_previous_token(client: Client) -> None:
    # GIVEN an agent enrolled once
    first = await steps.enrolled_token(client, "printer-a", "pi-3")
    # WHEN it is enrolled again with a fresh code
    code = (await steps.create_code(client, "printer-a"))["code"]
    second = await steps.enrol(client, code, "printer-a", "pi-3")
    # THEN the new token works and the old one is unknown
    assert second["replaced"] is True
    ok = await client.post("/v1/agents/printer-a/lease?wait=0", headers=auth(second["agent_token"]))
    await flows.expect(ok, 200)
    old = await client.post("/v1/agents/printer-a/lease?wait=0", headers=auth(first))
    flows.assert_error_shape(await flows.expect(old, 401), "unauthorized")


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"code": "short", "printer_id": "printer-a", "agent_id": "pi"}, 422, "validation_failed"),
        ({"code": "A" * 24, "printer_id": "Printer-A", "agent_id": "pi"}, 422, "validation_failed"),
        ({"code": "A" * 24, "printer_id": "printer-a", "agent_id": "p i"}, 422,
         "validation_failed"),
        ({"code": "A" * 24, "printer_id": "printer-a", "agent_id": "pi", "role": "operator"}, 422,
         "validation_failed"),
        ({"code": 12345678901234567890, "printer_id": "printer-a", "agent_id": "pi"}, 422,
         "validation_failed"),
        ("not json", 400, "malformed_json"),
    ],
)  # fmt: skip
async def test_a_malformed_enrolment_is_refused_in_the_error_shape(
    client: Client, body: Any, status: int, code: str
) -> None:
    if isinstance(body, str):
        response = await client.post("/v1/enrol", data=body,
                                     headers={"Content-Type": "application/json"})  # fmt: skip
    else:
        response = await client.post("/v1/enrol", json=body)
    flows.assert_error_shape(await flows.expect(response, status), code)


@pytest.mark.parametrize("body", [{"printer_id": "printer-a", "ttl_s": 0},
                                  {"printer_id": "printer-a", "ttl_s": 31 * 24 * 3600},
                                  {"printer_id": "nope"}, {}])  # fmt: skip
async def test_a_code_request_out_of_bounds_is_a_422(client: Client, body: Any) -> None:
    response = await client.post("/v1/enrolment-codes", json=body, headers=flows.OPERATOR)
    flows.assert_error_shape(await flows.expect(response, 422), "validation_failed")
