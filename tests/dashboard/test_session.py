"""Dashboard sign-in, session cookie and CSRF, over real HTTP against real Redis."""

from __future__ import annotations

import ssl
import subprocess
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from redis.asyncio import Redis

from badgeline.coordinator.api.dashboard import SESSION_COOKIE, SESSION_TTL_S
from badgeline.coordinator.app import create_app
from badgeline.coordinator.config import CoordinatorSettings
from badgeline.coordinator.store.keys import VenueKeys
from tests.conftest import KIOSK_TOKEN, METRICS_TOKEN, OPERATOR_TOKEN, agent_token, auth
from tests.coordinator.flows import venue_snapshot, without_attempts
from tests.dashboard.conftest import Client, sign_in
from tests.helpers import job_body

HEALTHY = {"reachable": True, "jammed": False, "cover_open": False, "paper": "ok"}


def set_cookie(response: aiohttp.ClientResponse) -> SimpleCookie:
    cookie: SimpleCookie = SimpleCookie()
    for header in response.headers.getall("Set-Cookie", []):
        cookie.load(header)
    return cookie


async def login_page(response: aiohttp.ClientResponse) -> str:
    text = await response.text()
    assert 'action="/dashboard/login"' in text, text[:300]
    return text


async def test_without_a_cookie_every_dashboard_door_is_closed(client: Client) -> None:
    response = await client.get("/")
    assert response.status == 200
    await login_page(response)
    # The page refuses inline script and framing, and is never cached.
    assert "script-src 'self'" in response.headers["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in response.headers["Content-Security-Policy"]
    assert response.headers["Cache-Control"] == "no-store"
    for path in ("/dashboard/session", "/dashboard/stream", "/dashboard/snapshot", "/v1/printers"):
        assert (await client.get(path)).status == 401, path


async def test_the_sign_in_page_says_why_a_session_ended(client: Client) -> None:
    # The page sends an operator whose session ended back here, naming why: the
    # text is the server's own, one per reason, never the query's.
    action = await login_page(await client.get("/?ended=action"))
    assert "your last action was not done" in action
    assert "session has ended" in await login_page(await client.get("/?ended=session"))
    planted = await login_page(await client.get("/?ended=<script>alert(1)</script>"))
    assert "alert(1)" not in planted
    assert '<p id="login-error" class="error" role="alert"></p>' in planted


async def test_a_wrong_or_non_operator_token_is_refused(
    client: Client, redis: Redis, settings: CoordinatorSettings
) -> None:
    before = await venue_snapshot(redis, settings.venue)
    for token, status, says in [
        ("not-a-token", 401, "not known"), ("", 401, "Paste the operator token"),
        (KIOSK_TOKEN, 403, "kiosk token"), (agent_token("printer-a"), 403, "agent token"),
        (METRICS_TOKEN, 403, "metrics token"),
    ]:  # fmt: skip
        response = await client.post("/dashboard/login", data={"token": token},
                                     allow_redirects=False)  # fmt: skip
        assert response.status == status, token
        assert says in await login_page(response)
        assert SESSION_COOKIE not in set_cookie(response)
    after = await venue_snapshot(redis, settings.venue)
    assert without_attempts(after) == without_attempts(before)  # no session was written


async def test_the_cookie_is_a_random_id_never_the_token(
    client: Client, redis: Redis, settings: CoordinatorSettings
) -> None:
    response = await client.post("/dashboard/login", data={"token": OPERATOR_TOKEN},
                                 allow_redirects=False)  # fmt: skip
    assert response.status == 303 and response.headers["Location"] == "/"
    morsel = set_cookie(response)[SESSION_COOKIE]
    assert morsel["httponly"] is True and morsel["samesite"] == "Strict"
    assert morsel["path"] == "/" and not morsel["secure"]  # plain HTTP here; TLS below
    assert OPERATOR_TOKEN not in morsel.value and len(morsel.value) == 43
    # Redis holds neither the token nor the cookie value, and the session expires.
    dump = repr(await venue_snapshot(redis, settings.venue))
    assert OPERATOR_TOKEN not in dump and morsel.value not in dump
    pattern = VenueKeys(settings.venue).prefix + "session:*"
    sessions = [key async for key in redis.scan_iter(match=pattern)]
    assert len(sessions) == 1
    assert 0 < await redis.ttl(sessions[0]) <= SESSION_TTL_S
    page = await client.get("/")
    assert 'src="/dashboard/static/dashboard.js"' in await page.text()


async def test_cookie_writes_need_the_csrf_header(client: Client, csrf: str) -> None:
    await client.post("/v1/agents/printer-a/heartbeat", headers=auth(agent_token("printer-a")),
                      json={"agent_id": "pi-a", "version": "t", "health": HEALTHY})  # fmt: skip
    # Reads by cookie need no CSRF token.
    assert (await client.get("/v1/printers")).status == 200
    for headers in ({}, {"X-CSRF-Token": "forged"}, {"X-CSRF-Token": ""}):
        refused = await client.post("/v1/printers/printer-a/pause", json={}, headers=headers)
        assert refused.status == 403, headers
        assert "X-CSRF-Token" in (await refused.json())["error"]["message"]
    printers = (await (await client.get("/v1/printers")).json())["items"]
    assert not printers[0]["paused"]  # the refused requests changed nothing
    done = await client.post("/v1/printers/printer-a/pause", json={"for_s": 60},
                             headers={"X-CSRF-Token": csrf})  # fmt: skip
    assert done.status == 200 and (await done.json())["paused"] is True
    # The history records the operator who holds the token, as with a Bearer call.
    submitted = await client.post("/v1/jobs", json=job_body("printer-b"),
                                  headers={"X-CSRF-Token": csrf})  # fmt: skip
    assert submitted.status == 201
    job = await (await client.get(f"/v1/jobs/{(await submitted.json())['job_id']}")).json()
    assert job["history"][0]["actor"] == "operator:ops"


async def test_bearer_clients_are_unchanged_beside_a_cookie(client: Client, csrf: str) -> None:
    # The client's jar now sends the session cookie with every request; a
    # Bearer header wins, needs no CSRF token, and keeps its own role.
    kiosk = await client.post("/v1/jobs", json=job_body("printer-a"), headers=auth(KIOSK_TOKEN))
    assert kiosk.status == 201
    beat = await client.post(
        "/v1/agents/printer-a/heartbeat", headers=auth(agent_token("printer-a")),
        json={"agent_id": "pi-a", "version": "t", "health": HEALTHY},
    )  # fmt: skip
    assert beat.status == 200
    # A kiosk token does not borrow the cookie's operator role.
    assert (await client.get("/v1/printers", headers=auth(KIOSK_TOKEN))).status == 403
    assert (await client.post("/v1/rebalance", headers=auth(OPERATOR_TOKEN))).status == 200


async def test_logout_ends_the_session(client: Client, csrf: str) -> None:
    cookie = next(c for c in client.session.cookie_jar if c.key == SESSION_COOKIE).value
    assert (await client.post("/dashboard/logout")).status == 403  # no CSRF header
    response = await client.post("/dashboard/logout", headers={"X-CSRF-Token": csrf})
    assert response.status == 200
    assert set_cookie(response)[SESSION_COOKIE].value == ""
    # The old cookie, replayed by hand, is dead server-side too.
    replay = await client.get("/dashboard/session", cookies={SESSION_COOKIE: cookie})
    assert replay.status == 401
    await login_page(await client.get("/", cookies={SESSION_COOKIE: cookie}))


async def test_a_token_rotated_out_of_the_config_ends_its_sessions(
    client: Client, csrf: str, redis: Redis, settings: CoordinatorSettings, aiohttp_client: Any
) -> None:
    cookie = next(c for c in client.session.cookie_jar if c.key == SESSION_COOKIE).value
    rotated = settings.model_copy(
        update={"tokens": [t for t in settings.tokens if t.role != "operator"]}
    )
    restarted: Client = await aiohttp_client(create_app(rotated, redis))
    response = await restarted.get("/dashboard/session", cookies={SESSION_COOKIE: cookie})
    assert response.status == 401


async def test_sign_in_again_replaces_the_session(client: Client, csrf: str) -> None:
    old = next(c for c in client.session.cookie_jar if c.key == SESSION_COOKIE).value
    new_csrf = await sign_in(client)
    new = next(c for c in client.session.cookie_jar if c.key == SESSION_COOKIE).value
    assert new != old and new_csrf != csrf
    assert (await client.get("/dashboard/session", cookies={SESSION_COOKIE: old})).status == 401


def self_signed(tmp_path: Path) -> ssl.SSLContext:
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    return context


async def test_over_tls_the_cookie_is_secure(
    redis: Redis, settings: CoordinatorSettings, tmp_path: Path
) -> None:
    runner = web.AppRunner(create_app(settings, redis))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=self_signed(tmp_path))
    await site.start()
    port = runner.addresses[0][1]
    try:
        async with aiohttp.ClientSession() as http:
            response = await http.post(
                f"https://127.0.0.1:{port}/dashboard/login", data={"token": OPERATOR_TOKEN},
                allow_redirects=False, ssl=False,  # our own throwaway certificate
            )  # fmt: skip
            assert response.status == 303
            assert set_cookie(response)[SESSION_COOKIE]["secure"] is True
    finally:
        await runner.cleanup()
