"""Signed webhooks: every job event reaches each target that wants it once, signed,
through a target that answers 500 or hangs, without holding up other deliveries;
replicas share the work and never deliver one event twice; a replica that dies
mid-delivery leaves its event to another."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from pydantic import ValidationError
from redis.asyncio import Redis

from badgeline.coordinator.config import CoordinatorSettings
from badgeline.coordinator.store.keys import VenueKeys
from badgeline.protocol.events import JobEvent
from tests.conftest import OTHER_KIOSK_TOKEN, auth
from tests.coordinator import flows
from tests.coordinator.conftest import MakeClient
from tests.coordinator.sse import stored_events
from tests.helpers import job_body, wait_for

Client = TestClient[Any, Any]
SECRET = "whsec-for-tests-0123456789"
DESK_SECRET = "another-secret-for-desk-2"


def verify(secret: bytes, header: str, body: bytes, tolerance_s: float = 300) -> bool:
    """The check docs/api.md gives a receiver, as it gives it."""
    fields = dict(part.split("=", 1) for part in header.split(","))
    timestamp = int(fields["t"])
    expected = hmac.new(secret, f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    fresh = abs(time.time() - timestamp) <= tolerance_s
    return fresh and hmac.compare_digest(expected, fields["v1"])


@dataclass
class Attempt:
    path: str
    event_id: str
    event: dict[str, Any]
    signed: bool
    answer: str  # "200", "500" or "hang"
    at: float = field(default_factory=time.monotonic)


@dataclass
class Receiver:
    """A real HTTP server taking the webhooks; `plan` decides each attempt's answer."""

    plan: Callable[[Attempt, list[Attempt]], str] = lambda attempt, before: "200"
    attempts: list[Attempt] = field(default_factory=list)
    hanging: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)
    url: str = ""

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        secret = DESK_SECRET if request.path == "/desk-2" else SECRET
        signed = verify(secret.encode(), request.headers["Badgeline-Signature"], body)
        event = json.loads(body)
        attempt = Attempt(request.path, request.headers["Badgeline-Event-Id"], event, signed, "")
        before = [a for a in self.attempts
                  if (a.event_id, a.path) == (attempt.event_id, attempt.path)]  # fmt: skip
        attempt.answer = self.plan(attempt, before)
        self.attempts.append(attempt)
        if attempt.answer == "hang":
            self.hanging.set()
            await asyncio.wait_for(self.release.wait(), timeout=10)
        return web.Response(status=int(attempt.answer) if attempt.answer != "hang" else 200)

    def delivered(self, path: str = "/hook") -> dict[str, list[Attempt]]:
        """Each event id's attempts that were answered 200."""
        found: dict[str, list[Attempt]] = {}
        for attempt in self.attempts:
            if attempt.path == path and attempt.answer == "200":
                found.setdefault(attempt.event_id, []).append(attempt)
        return found


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    target = Receiver()
    app = web.Application()
    app.router.add_post("/hook", target.handle)
    app.router.add_post("/desk-2", target.handle)
    server = TestServer(app)
    await server.start_server()
    target.url = str(server.make_url(""))
    yield target
    target.release.set()
    await server.close()


def webhook_settings(receiver: Receiver, timeout_s: float = 0.3) -> dict[str, Any]:
    return {
        "webhooks": [
            {"name": "crm", "url": receiver.url + "/hook", "secret": SECRET},
            {"name": "desk-2", "url": receiver.url + "/desk-2", "secret": DESK_SECRET,
             "kiosks": ["kiosk-2"]},
        ],
        "webhook_timeout_s": timeout_s, "webhook_backoff_unit_s": 0.05,
        "webhook_backoff_cap_s": 0.2,
    }  # fmt: skip


async def all_delivered(receiver: Receiver, redis: Redis, venue: str) -> bool:
    stored = {entry_id for entry_id, _ in await stored_events(redis, venue)}
    return bool(stored) and stored <= set(receiver.delivered())


async def test_each_event_arrives_once_signed_through_a_500_and_a_hang(
    make_client: MakeClient, receiver: Receiver, redis: Redis, settings: CoordinatorSettings
) -> None:
    # GIVEN a target that answers 500 to the first try of a job's `queued` event and
    # hangs (past webhook_timeout_s) on every try of its `leased` one until another
    # kiosk's job has been delivered
    slow_key = "scan-slow-" + secrets.token_hex(6)

    def plan(attempt: Attempt, before: list[Attempt]) -> str:
        if attempt.path != "/hook" or attempt.event["idempotency_key"] != slow_key:
            return "200"
        if attempt.event["state"] == "queued" and not before:
            return "500"
        others = [a for a in receiver.attempts if a.event["idempotency_key"] != slow_key]
        if attempt.event["state"] == "leased" and not others:
            return "hang"
        return "200"

    receiver.plan = plan
    client = await make_client(**webhook_settings(receiver))
    await flows.heartbeat(client)
    slow = (await flows.submit(client, idempotency_key=slow_key))["job_id"]
    await flows.lease_one(client)
    await asyncio.wait_for(receiver.hanging.wait(), timeout=10)
    # WHEN, while that hangs, kiosk-2 submits a job
    other = await client.post("/v1/jobs", json=job_body(), headers=auth(OTHER_KIOSK_TOKEN))
    other_id = (await flows.expect(other, 201))["job_id"]
    # THEN every event of the venue reaches the target once, answered 200
    await wait_for(lambda: all_delivered(receiver, redis, settings.venue), timeout_s=20)
    delivered = receiver.delivered()
    assert all(len(attempts) == 1 for attempts in delivered.values()), delivered
    # AND each was signed, is the event as the stream has it, and names itself
    stored = dict(await stored_events(redis, settings.venue))
    for event_id, (attempt,) in delivered.items():
        assert attempt.signed and attempt.event["id"] == event_id and event_id in stored
        JobEvent.model_validate(attempt.event)
    # AND the 500 and the hang were tried again
    tries = {(a.event["job_id"], a.event["state"], a.answer) for a in receiver.attempts
             if a.path == "/hook"}  # fmt: skip
    assert {(slow, "queued", "500"), (slow, "leased", "hang")} <= tries
    # AND the hang held up nothing else: kiosk-2's job went through while it hung
    assert (other_id, "queued", "200") in tries
    # AND the target filtered to kiosk-2 got kiosk-2's events only, once each
    desk = receiver.delivered("/desk-2")
    assert {a.event["job_id"] for (a,) in desk.values()} == {other_id}
    assert all(a.signed for (a,) in desk.values())
    await client.close()


async def test_two_replicas_deliver_each_event_once(
    make_client: MakeClient, receiver: Receiver, redis: Redis, settings: CoordinatorSettings
) -> None:
    # GIVEN two replicas delivering to one target
    replicas = [await make_client(**webhook_settings(receiver)) for _ in range(2)]
    # WHEN jobs come and go through both
    for n in range(12):
        client = replicas[n % 2]
        await flows.cancel(client, (await flows.submit(client))["job_id"])
    # THEN the target gets each event once: one attempt, not one per replica
    await wait_for(lambda: all_delivered(receiver, redis, settings.venue), timeout_s=20)
    attempts = [a.event_id for a in receiver.attempts if a.path == "/hook"]
    assert len(attempts) == len(set(attempts)) == 24
    # AND both replicas read through the one group, each as its own consumer
    consumers = await redis.xinfo_consumers(VenueKeys(settings.venue).events, "webhook:crm")
    assert len(consumers) == 2


async def test_an_event_a_dying_replica_was_delivering_is_delivered_by_another(
    make_client: MakeClient, receiver: Receiver, redis: Redis, settings: CoordinatorSettings
) -> None:
    # GIVEN a replica whose first delivery hangs at the target
    receiver.plan = lambda attempt, before: "hang" if not receiver.attempts else "200"
    first = await make_client(**webhook_settings(receiver, timeout_s=1.0))
    job_id = (await flows.submit(first))["job_id"]
    await asyncio.wait_for(receiver.hanging.wait(), timeout=10)
    # WHEN that replica stops mid-delivery and another runs
    await first.close()
    await make_client(**webhook_settings(receiver, timeout_s=1.0))
    # THEN the other claims the event once its time is up, and delivers it
    await wait_for(lambda: all_delivered(receiver, redis, settings.venue), timeout_s=20)
    tries = [a for a in receiver.attempts if a.path == "/hook" and a.event["job_id"] == job_id]
    assert [a.answer for a in tries] == ["hang", "200"]


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"secret": "short"}, "16 characters"),
        ({"secret": None}, "set secret or secret_file"),
        ({"url": "ftp://example.org/hook"}, "http:// or https://"),
        ({"kiosks": ["kiosk-9"]}, "names kiosks no kiosk token has: kiosk-9"),
    ],
)
def test_a_webhook_the_config_gets_wrong_stops_the_start_saying_why(
    settings: CoordinatorSettings, change: dict[str, Any], says: str
) -> None:
    target = {"name": "crm", "url": "https://crm.example/hook", "secret": SECRET} | change
    with pytest.raises(ValidationError, match=says):
        CoordinatorSettings.model_validate({**settings.model_dump(), "webhooks": [target]})
