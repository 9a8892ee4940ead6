"""What someone who can read Redis, and write it, can do with what they read: act as
no operator, kiosk or agent. Redis holds sessions, enrolment codes and issued agent
tokens only as hashes; a session record made by hand (say, copied from a real one,
with the digest of a token added) is not a session."""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

from aiohttp.test_utils import TestClient
from redis.asyncio import Redis

from badgeline.coordinator.api.auth import token_digest
from badgeline.coordinator.api.sessions import SESSION_COOKIE
from badgeline.coordinator.config import CoordinatorSettings
from badgeline.coordinator.store.keys import VenueKeys
from tests.conftest import KIOSK_TOKEN, OPERATOR_TOKEN, auth
from tests.coordinator import flows
from tests.coordinator.test_auth import HEARTBEAT
from tests.helpers import job_body
from tests.security import steps

Client = TestClient[Any, Any]
OPERATOR_DIGEST = token_digest(OPERATOR_TOKEN)


async def _sign_in(client: Client) -> str:
    response = await client.post("/dashboard/login", data={"token": OPERATOR_TOKEN},
                                 allow_redirects=False)  # fmt: skip
    assert response.status == 303
    client.session.cookie_jar.clear()  # every call below names its cookie itself
    return response.cookies[SESSION_COOKIE].value


async def _session_record(redis: Redis, venue: str, cookie: str) -> dict[bytes, bytes]:
    key = VenueKeys(venue).session(hashlib.sha256(cookie.encode()).hexdigest())
    record: dict[bytes, bytes] = await redis.hgetall(key)
    assert record, "the sign-in wrote no session where the coordinator keeps them"
    return record


async def _as_cookie(client: Client, cookie: str, method: str = "GET",
                     path: str = "/dashboard/session", **kwargs: Any) -> int:  # fmt: skip
    headers = {"Cookie": f"{SESSION_COOKIE}={cookie}", **kwargs.pop("headers", {})}
    response = await client.request(method, path, headers=headers, **kwargs)
    return response.status


async def test_the_stored_session_holds_no_credential(
    client: Client, redis: Redis, settings: CoordinatorSettings
) -> None:
    # GIVEN an operator signed in to the dashboard
    cookie = await _sign_in(client)
    # WHEN Redis is read
    dump = b"\n".join(await steps.redis_dump(redis, settings.venue))
    # THEN it holds neither the cookie nor the token, nor the token's digest
    assert cookie.encode() not in dump
    assert OPERATOR_TOKEN.encode() not in dump
    assert OPERATOR_DIGEST.encode() not in dump
    # AND the session itself works
    assert await _as_cookie(client, cookie) == 200


async def _admitted(client: Client, candidates: list[str]) -> list[tuple[str, str, int]]:
    """Each candidate as a Bearer token to an operator's, a kiosk's and an agent's route,
    and as a session cookie: where it was not refused as unknown."""
    admitted = []
    routes = [("GET", "/v1/dead-letters", None), ("GET", "/v1/jobs?attendee_id=att_1234", None),
              ("POST", "/v1/agents/printer-a/heartbeat", HEARTBEAT)]  # fmt: skip
    for candidate in candidates:
        for method, path, body in routes:
            bearer = {"Authorization": f"Bearer {candidate}"}
            response = await client.request(method, path, json=body, headers=bearer)
            if response.status != 401:
                admitted.append((candidate, path, response.status))
        if (status := await _as_cookie(client, candidate)) != 401:
            admitted.append((candidate, "cookie", status))
    return admitted


async def test_what_redis_holds_is_no_credential_and_makes_none(
    client: Client, redis: Redis, settings: CoordinatorSettings
) -> None:
    # GIVEN a venue with a signed-in operator, an enrolled agent and a kiosk's job
    cookie = await _sign_in(client)
    await steps.enrolled_token(client, "printer-a", "pi-reader")
    await flows.expect(await client.post("/v1/jobs", json=job_body(),
                                         headers=auth(KIOSK_TOKEN)), 201)  # fmt: skip
    # WHEN a reader presents every key, field, value and member Redis holds as a
    # Bearer token and as a session cookie
    found = {item.decode("utf-8", "replace") for item in
             await steps.redis_dump(redis, settings.venue)}  # fmt: skip
    candidates = sorted(c for c in found if c.isascii() and c.isprintable() and 0 < len(c) <= 512)
    assert len(candidates) > 20, candidates  # the dump saw the flows above
    # THEN none of it is a credential
    assert not await _admitted(client, candidates)
    # WHEN they write a session of their own: a cookie they chose, the real record's
    # fields copied, and the operator token's digest (as the config has it) beside them
    record = await _session_record(redis, settings.venue, cookie)
    forged = secrets.token_urlsafe(32)
    key = VenueKeys(settings.venue).session(hashlib.sha256(forged.encode()).hexdigest())
    await redis.hset(key, mapping={**record, b"name": b"ops", b"token_sha256": OPERATOR_DIGEST})
    await redis.expire(key, 3600)
    csrf = record[b"csrf"].decode()
    # THEN the forged cookie is signed in to nothing: no session, no operator route, no write
    assert await _as_cookie(client, forged) == 401
    assert await _as_cookie(client, forged, path="/v1/printers") == 401
    assert await _as_cookie(client, forged, "POST", "/v1/printers/printer-a/pause",
                            json={}, headers={"X-CSRF-Token": csrf}) == 401  # fmt: skip
    # AND the record is dropped as not the coordinator's
    assert not await redis.exists(key)
    # AND the real session still works
    assert await _as_cookie(client, cookie) == 200
