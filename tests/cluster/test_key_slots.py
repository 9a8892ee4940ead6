"""Every Lua script touches one hash slot: the venue's (keys.py). On a Redis Cluster
a script runs on one master, so its KEYS must share a slot (redis-py refuses
otherwise) and the keys it builds inside Lua from the prefix it is handed must
stay in that slot too (Valkey only refuses those when the slot is on another
node, so a mistake could pass on a small cluster). This drives every script
through the HTTP API for two venues and checks each call's keys and key-like
arguments."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from redis.asyncio import Redis
from redis.crc import key_slot

from badgeline.coordinator.app import create_app
from badgeline.coordinator.config import CoordinatorSettings, WebhookTarget
from badgeline.coordinator.store.keys import VenueKeys
from badgeline.coordinator.store.script_loader import LoadedScript, load_scripts
from tests.coordinator import flows
from tests.coordinator.upgrade.recorded import restore_recorded_venue
from tests.helpers import job_body, wait_for

Client = TestClient[Any, Any]
HEALTHY = {"reachable": True, "jammed": False, "cover_open": False, "paper": "ok"}


@dataclass(frozen=True)
class Call:
    script: str
    keys: tuple[str, ...]
    args: tuple[Any, ...]


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[Call]:
    """Every script call of this test, recorded on its way to the real Redis."""
    seen: list[Call] = []
    original = LoadedScript.__call__

    async def recording(self: LoadedScript, keys: list[str], args: list[Any]) -> Any:
        seen.append(Call(self.name, tuple(keys), tuple(args)))
        return await original(self, keys, args)

    monkeypatch.setattr(LoadedScript, "__call__", recording)
    return seen


def _slot(key: str) -> int:
    return key_slot(key.encode())


async def _beat(client: Client, printer_id: str, **health: Any) -> None:
    body = {"agent_id": f"pi-{printer_id}", "version": "test", "health": {**HEALTHY, **health}}
    await flows.expect(await client.post(f"/v1/agents/{printer_id}/heartbeat", json=body,
                                         headers=flows.agent(printer_id)), 200)  # fmt: skip


async def _every_operation(client: Client) -> None:
    await _beat(client, "printer-a")
    await _beat(client, "printer-b")
    ids = [(await flows.submit(client))["job_id"] for _ in range(4)]
    leased = await flows.lease_one(client)
    renew = f"/v1/agents/printer-a/jobs/{leased['job_id']}/renew"
    await flows.expect(await client.post(renew, json={"lease_id": leased["lease_id"]},
                                         headers=flows.agent()), 200)  # fmt: skip
    await flows.start(client, leased["job_id"], leased["lease_id"])
    await flows.ack(client, leased["job_id"], leased["lease_id"], result="failed", error="jam")
    await flows.cancel(client, ids[-1])
    await flows.expect(await client.post("/v1/rebalance", headers=flows.OPERATOR), 200)
    await flows.redrive(client, ids[1])
    # an operator moves a waiting job, then cancels every waiting job of its printer
    await flows.expect(await client.post(f"/v1/jobs/{ids[1]}/move", headers=flows.OPERATOR,
                                         json={"printer_target": "printer-b"}), 200)  # fmt: skip
    await flows.expect(await client.post(f"/v1/jobs/{ids[1]}/move", headers=flows.OPERATOR,
                                         json={"printer_target": "auto"}), 200)  # fmt: skip
    await flows.expect(await client.post("/v1/queues/printer-a/cancel",
                                         headers=flows.OPERATOR), 200)  # fmt: skip
    await flows.expect(await client.get("/v1/reconcile", headers=flows.OPERATOR), 200)
    # the lists kept newest first, read a page at a time (list_after-1.lua)
    await flows.expect(await client.get("/v1/failovers", headers=flows.OPERATOR), 200)
    await flows.expect(await client.get("/v1/alerts/events", headers=flows.OPERATOR), 200)
    code = await flows.expect(await client.post("/v1/enrolment-codes", json={
        "printer_id": "printer-c"}, headers=flows.OPERATOR), 201)  # fmt: skip
    await flows.expect(await client.post("/v1/enrol", json={
        "code": code["code"], "printer_id": "printer-c", "agent_id": "pi-c"}), 201)  # fmt: skip
    # a job printing on a printer that then dies: failover and the in-flight check
    await flows.submit(client, **job_body("printer-b"))
    granted = await flows.lease_one(client, "printer-b")
    await flows.start(client, granted["job_id"], granted["lease_id"], "printer-b")
    await _beat(client, "printer-b", jammed=True)
    await flows.submit(client, printer_target="auto")  # routed by the route script


@pytest.fixture
async def webhook_url(aiohttp_server: Any) -> str:
    """A webhook target that takes every event: the delivery scripts run too."""

    async def take(request: web.Request) -> web.Response:
        return web.Response()

    app = web.Application()
    app.router.add_post("/hook", take)
    server = await aiohttp_server(app)
    return str(server.make_url("/hook"))


async def test_every_script_keeps_to_its_venues_slot(
    redis: Redis, settings: CoordinatorSettings, aiohttp_client: Any, calls: list[Call],
    webhook_url: str,
) -> None:  # fmt: skip
    # GIVEN two venues whose hash tags land in different slots
    venues = (settings.venue + "n", settings.venue + "s")
    slots = {venue: _slot(VenueKeys(venue).sequence) for venue in venues}
    assert len(set(slots.values())) == 2
    # (a tiny retention: the closed jobs leave Redis through the retention sweep)
    tuned = {"kiosk_rate_per_s": 1000.0, "heartbeat_interval_s": 30.0, "ack_grace_s": 0.1,
             "monitor_interval_s": 0.05, "lease_scan_interval_s": 0.05, "job_retention_s": 1,
             "retention_sweep_interval_s": 0.05, "expiry_sweep_interval_s": 0.05,
             "webhooks": [WebhookTarget(name="crm", url=webhook_url, secret="s" * 16)]}  # fmt: skip
    # WHEN each venue's coordinator starts on a venue the previous release left
    # (its start upgrades the stored jobs) and runs every operation there is
    for venue in venues:
        await restore_recorded_venue(redis, venue)
        venue_settings = settings.model_copy(update={"venue": venue, **tuned})
        client: Client = await aiohttp_client(create_app(venue_settings, redis))
        await _every_operation(client)
        await redis.set(VenueKeys(venue).data_format, 2)
        await aiohttp_client(create_app(venue_settings, redis))
    every_script = set(load_scripts(redis))
    for venue in venues:
        await wait_for(lambda v=venue: _true(every_script <= _scripts_seen(calls, v)), 10)
    # THEN every call's KEYS hash to its venue's slot, and every key name it is
    # handed to build more keys from (prefix, wake channel) is that venue's
    for call in calls:
        venue = next(v for v in venues if _of_venue(call, v))
        assert {_slot(key) for key in call.keys} == {slots[venue]}, call
        named = [arg for arg in call.args if isinstance(arg, str) and arg.startswith("bl:")]
        assert all(arg.startswith(VenueKeys(venue).prefix) for arg in named), call


def _of_venue(call: Call, venue: str) -> bool:
    return any(key.startswith(VenueKeys(venue).prefix) for key in call.keys)


def _scripts_seen(calls: list[Call], venue: str) -> set[str]:
    return {call.script for call in calls if _of_venue(call, venue)}


async def _true(value: bool) -> bool:
    return value
