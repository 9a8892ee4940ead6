"""Secrets at rest and in logs: the config and Redis hold only hashes of tokens,
enrolment codes and session cookies, and no log line carries any of them.

Every flow that handles a secret runs (sign-in, enrolment, re-enrolment, refusals,
a job's whole life), then Redis is dumped and the log is read, and every secret
is looked for in both.
"""

from __future__ import annotations

import json
import logging
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient
from pydantic import ValidationError
from redis.asyncio import Redis

from badgeline.coordinator.config import CoordinatorSettings, TokenEntry
from badgeline.coordinator.store.embedded import EmbeddedRedis
from badgeline.log import JsonLineFormatter
from tests.conftest import KIOSK_TOKEN, OPERATOR_TOKEN, TEST_PRINTERS, agent_token, auth
from tests.coordinator import flows
from tests.coordinator.test_auth import HEARTBEAT
from tests.security import steps
from tests.security.conftest import running_coordinator

Client = TestClient[Any, Any]
CONFIGURED = [KIOSK_TOKEN, OPERATOR_TOKEN, *(agent_token(p) for p in TEST_PRINTERS)]


def test_the_config_holds_only_token_hashes(settings: CoordinatorSettings) -> None:
    dumped = settings.model_dump_json()
    assert not [token for token in CONFIGURED if token in dumped]
    # AND a token pasted where its hash belongs is refused at start-up
    with pytest.raises(ValidationError):
        TokenEntry(name="oops", role="kiosk", sha256=KIOSK_TOKEN)


async def _dashboard_session(client: Client) -> tuple[str, str]:
    """Sign in with the operator token; the session cookie and its CSRF token."""
    response = await client.post("/dashboard/login", data={"token": OPERATOR_TOKEN},
                                 allow_redirects=False)  # fmt: skip
    assert response.status == 303
    cookie = response.cookies["badgeline_session"].value
    jar = {"Cookie": f"badgeline_session={cookie}"}
    session = await flows.expect(await client.get("/dashboard/session", headers=jar), 200)
    await flows.expect(await client.get("/dashboard/snapshot", headers=jar), 200)
    client.session.cookie_jar.clear()  # the rest of the flows use Bearer tokens only
    return cookie, session["csrf_token"]


async def _every_secret_flow(client: Client) -> tuple[list[str], str]:
    """Run every flow that handles a secret; the secrets it handled, and the CSRF
    token (Redis keeps that one as it is: it must be handed back to the page, and
    without the session cookie, held only as a hash, it is worth nothing)."""
    secrets = list(CONFIGURED)
    cookie, csrf = await _dashboard_session(client)
    secrets.append(cookie)
    # enrolment, a second enrolment of the same agent (revoking the first token), refusals
    first_code = (await steps.create_code(client))["code"]
    first = (await steps.enrol(client, first_code, agent_id="pi-s"))["agent_token"]
    second_code = (await steps.create_code(client))["code"]
    second = (await steps.enrol(client, second_code, agent_id="pi-s"))["agent_token"]
    await steps.enrol(client, first_code, agent_id="pi-t", status=410)
    wrong_code = (await steps.create_code(client, "printer-b"))["code"]
    await steps.enrol(client, wrong_code, "printer-a", status=403)
    await flows.expect(await client.post("/v1/agents/printer-a/heartbeat", json=HEARTBEAT,
                                         headers=auth(first)), 401)  # fmt: skip
    secrets += [first_code, first, second_code, second, wrong_code]
    # a job's life, with the enrolled token printing it
    job_id = (await flows.submit(client))["job_id"]
    enrolled = auth(second)
    await flows.expect(await client.post("/v1/agents/printer-a/heartbeat", json=HEARTBEAT,
                                         headers=enrolled), 200)  # fmt: skip
    leased = (await flows.expect(await client.post("/v1/agents/printer-a/lease?wait=0",
                                                   headers=enrolled), 200))["jobs"][0]  # fmt: skip
    path = f"/v1/agents/printer-a/jobs/{job_id}"
    start = {"lease_id": leased["lease_id"]}
    await flows.expect(await client.post(f"{path}/start", json=start, headers=enrolled), 200)
    ack = {"lease_id": leased["lease_id"], "result": "printed"}
    await flows.expect(await client.post(f"{path}/ack", json=ack, headers=enrolled), 200)
    # tokens presented where they do not belong, and near misses
    await flows.expect(await client.get("/v1/dead-letters", headers=auth(KIOSK_TOKEN)), 403)
    await flows.expect(await client.get("/v1/dead-letters", headers=auth(KIOSK_TOKEN + "x")), 401)
    secrets.append(KIOSK_TOKEN + "x")
    return secrets, csrf


async def test_redis_and_the_log_never_see_a_secret(
    client: Client, redis: Redis, settings: CoordinatorSettings, caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN every log record of every logger captured
    caplog.set_level(logging.DEBUG)
    # WHEN every flow that handles a secret runs
    secrets, csrf = await _every_secret_flow(client)
    # THEN no Redis key, value, field or member contains one
    dump = await steps.redis_dump(redis, settings.venue)
    at_rest = [s for s in secrets if any(s.encode() in item for item in dump)]
    assert not at_rest, at_rest
    # AND no log line does
    formatter = JsonLineFormatter()
    lines = [formatter.format(record) + record.getMessage() for record in caplog.records]
    assert any('"agent_enrolled"' in line for line in lines)  # the log was captured
    logged = [s for s in [*secrets, csrf] if any(s in line for line in lines)]
    assert not logged, logged


def _post(url: str, body: Any, token: str | None = None) -> Any:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers)
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def test_the_coordinator_process_logs_no_secret_at_debug(
    tmp_path: Path, redis_server: EmbeddedRedis
) -> None:
    # GIVEN a coordinator process logging at DEBUG to its stderr
    with running_coordinator(tmp_path, redis_server.url, "secretlogs", log_level="DEBUG") as live:
        # WHEN an operator makes a code and an agent enrols with it and heartbeats
        code = _post(live.url + "/v1/enrolment-codes", {"printer_id": "printer-a"},
                     OPERATOR_TOKEN)["code"]  # fmt: skip
        token = _post(live.url + "/v1/enrol", {"code": code, "printer_id": "printer-a",
                                               "agent_id": "pi-log"})["agent_token"]  # fmt: skip
        _post(live.url + "/v1/agents/printer-a/heartbeat", HEARTBEAT, token)
        _post(live.url + "/v1/jobs", {"attendee_id": "att_log1", "printer_target": "printer-a",
                                      "badge_pdf_ref": "https://b.example/x.pdf",
                                      "idempotency_key": "scan-log-0001"}, KIOSK_TOKEN)  # fmt: skip
    # THEN its log has the enrolment, and none of the secrets
    log = live.log()
    assert '"agent_enrolled"' in log and '"job_enqueued"' in log
    leaked = [s for s in (code, token, OPERATOR_TOKEN, KIOSK_TOKEN) if s in log]
    assert not leaked, leaked
