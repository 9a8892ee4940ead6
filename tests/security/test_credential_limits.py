"""Limits where secrets are guessed: `POST /v1/enrol` and the dashboard sign-in take a
bounded number of attempts per client address, shared by every replica (Redis), and
a run of refusals is one log line with its count. Over real sockets, real Redis."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestClient, TestServer

from badgeline.coordinator.api.attempts import REFUSALS, client_of
from badgeline.coordinator.api.dashboard import SESSION_COOKIE
from badgeline.log import EVENT_LOGGER
from tests.conftest import OPERATOR_TOKEN
from tests.coordinator import flows
from tests.coordinator.conftest import MakeClient
from tests.helpers import wait_for
from tests.security import steps

Client = TestClient[Any, Any]
# Three attempts, then practically never another: refills cannot blur a test.
FEW_ATTEMPTS: dict[str, Any] = {"credential_attempts_burst": 3, "credential_attempts_per_min": 0.01}
# Quiet this long and a spell of refusals is over (and logged): short, for the tests.
QUIET_S = 0.2


async def _limited_client(make_client: MakeClient, **settings: Any) -> Client:
    client = await make_client(**{**FEW_ATTEMPTS, **settings})
    assert isinstance(client.server, TestServer)
    client.server.app[REFUSALS].quiet_s = QUIET_S
    return client


def _wrong_code(n: int) -> dict[str, str]:
    return {"code": f"wrongcode{n:010d}", "printer_id": "printer-a", "agent_id": "pi-guess"}


def _events(caplog: pytest.LogCaptureFixture, event: str) -> list[dict[str, Any]]:
    return [r.fields for r in caplog.records  # type: ignore[attr-defined]
            if getattr(r, "fields", {}).get("event") == event]  # fmt: skip


async def _expect_limited(response: aiohttp.ClientResponse) -> None:
    body = await flows.expect(response, 429)
    flows.assert_error_shape(body, "rate_limited")
    assert body["limit"] == "attempts"
    assert int(response.headers["Retry-After"]) >= 1


@pytest.fixture
def events(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.INFO, logger=EVENT_LOGGER)
    return caplog


@pytest.fixture
async def second_address() -> AsyncIterator[aiohttp.ClientSession]:
    """A client from 127.0.0.2 (Linux routes all of 127/8 to loopback): another address."""
    connector = aiohttp.TCPConnector(local_addr=("127.0.0.2", 0))
    async with aiohttp.ClientSession(connector=connector) as session:
        yield session


async def test_a_run_of_wrong_enrolment_codes_is_cut_off_and_logged_once(
    make_client: MakeClient, events: pytest.LogCaptureFixture
) -> None:
    # GIVEN three attempts per address
    client = await _limited_client(make_client)
    # WHEN one address sends twenty wrong codes
    statuses = []
    for n in range(20):
        response = await client.post("/v1/enrol", json=_wrong_code(n))
        statuses.append(response.status)
        if response.status == 429:
            await _expect_limited(response)
    # THEN three were looked at and the rest refused with 429 and Retry-After
    assert statuses == [403] * 3 + [429] * 17, statuses
    # AND while refused, even a right code is refused: the 429 says nothing of the code
    code = (await steps.create_code(client))["code"]
    right = {"code": code, "printer_id": "printer-a", "agent_id": "pi-guess"}
    await _expect_limited(await client.post("/v1/enrol", json=right))

    # AND the run is one log line with its count, once the address is quiet
    async def logged() -> list[dict[str, Any]]:
        return _events(events, "credential_attempts_refused")

    [line] = await wait_for(logged, timeout_s=10)
    assert (line["route"], line["client"], line["refused"]) == ("enrol", "127.0.0.1", 18)
    assert line["ongoing"] is False
    # AND only the attempts looked at were logged one by one
    assert len(_events(events, "enrolment_refused")) == 3


async def test_the_limit_is_shared_by_every_replica(make_client: MakeClient) -> None:
    # GIVEN two coordinators on one Redis, and an address that spent its attempts on one
    one, two = await _limited_client(make_client), await _limited_client(make_client)
    for n in range(3):
        await flows.expect(await one.post("/v1/enrol", json=_wrong_code(n)), 403)
    # WHEN it tries the other, THEN it is refused there too
    await _expect_limited(await two.post("/v1/enrol", json=_wrong_code(3)))


async def test_a_successful_enrolment_gives_its_attempt_back(make_client: MakeClient) -> None:
    # GIVEN three attempts per address, and five agents enrolling from one address
    client = await _limited_client(make_client)
    for n in range(5):
        # WHEN each exchanges its own valid code, THEN each is enrolled
        await steps.enrolled_token(client, "printer-a", f"pi-{n}")
    # AND the address still has its three attempts for wrong codes, then no more
    for n in range(3):
        await flows.expect(await client.post("/v1/enrol", json=_wrong_code(n)), 403)
    await _expect_limited(await client.post("/v1/enrol", json=_wrong_code(3)))


async def test_another_address_is_not_limited_and_forwarded_for_is_not_believed(
    make_client: MakeClient, second_address: aiohttp.ClientSession
) -> None:
    # GIVEN an address that claims a new X-Forwarded-For address with each wrong code
    client = await _limited_client(make_client)
    for n in range(3):
        response = await client.post("/v1/enrol", json=_wrong_code(n),
                                     headers={"X-Forwarded-For": f"203.0.113.{n}"})  # fmt: skip
        await flows.expect(response, 403)
    # THEN the header does not make it another client
    refused = await client.post("/v1/enrol", json=_wrong_code(3),
                                headers={"X-Forwarded-For": "203.0.113.99"})  # fmt: skip
    await _expect_limited(refused)
    # AND a client at another address still has its own attempts
    url = str(client.make_url("/v1/enrol"))
    async with second_address.post(url, json=_wrong_code(4)) as response:
        await flows.expect(response, 403)


async def test_a_run_of_wrong_operator_tokens_at_sign_in_is_cut_off_and_logged_once(
    make_client: MakeClient, events: pytest.LogCaptureFixture,
    second_address: aiohttp.ClientSession,
) -> None:  # fmt: skip
    # GIVEN three attempts per address, and an operator who signed in five times from it
    client = await _limited_client(make_client)

    async def sign_in(token: str) -> aiohttp.ClientResponse:
        return await client.post("/dashboard/login", data={"token": token},
                                 allow_redirects=False)  # fmt: skip

    assert [(await sign_in(OPERATOR_TOKEN)).status for _ in range(5)] == [303] * 5
    # WHEN that address tries five wrong tokens
    statuses = [(await sign_in(f"guess-{n}")).status for n in range(5)]
    # THEN three were refused as unknown (the sign-in page) and two as too many: the
    # sign-ins that succeeded gave their attempts back
    assert statuses == [401, 401, 401, 429, 429], statuses
    # AND while refused, the operator's own token is refused too, with no session
    right = await sign_in(OPERATOR_TOKEN)
    await _expect_limited(right)
    assert SESSION_COOKIE not in right.cookies

    # AND the run is one log line with its count
    async def logged() -> list[dict[str, Any]]:
        return _events(events, "credential_attempts_refused")

    [line] = await wait_for(logged, timeout_s=10)
    assert (line["route"], line["client"], line["refused"]) == ("login", "127.0.0.1", 3)
    # AND the operator signs in from another address
    url = str(client.make_url("/dashboard/login"))
    async with second_address.post(url, data={"token": OPERATOR_TOKEN},
                                   allow_redirects=False) as response:  # fmt: skip
        assert response.status == 303


@pytest.mark.parametrize(
    ("peer", "client"),
    [
        ("10.0.0.7", "10.0.0.7"),
        ("::ffff:10.0.0.7", "10.0.0.7"),  # IPv4 mapped into IPv6: the same client
        ("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"),
        ("2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"),  # one /64: one client
        (None, "unknown"),
    ],
)
def test_an_ipv6_client_counts_by_its_64(peer: str | None, client: str) -> None:
    assert client_of(peer) == client
