"""The core job flows on a real 3-master Redis Cluster: two venues whose
hash slots live on different masters, each served by its own coordinator that
knows one node of the cluster and discovers the rest."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import redis as sync_redis
from aiohttp.test_utils import TestClient

from badgeline.coordinator.api.context import COORDINATOR
from badgeline.coordinator.config import ConfigError
from badgeline.coordinator.store.connection import connected
from badgeline.coordinator.store.embedded import EmbeddedRedis
from badgeline.coordinator.store.keys import VenueKeys
from tests.cluster.conftest import MakeVenue, cluster_settings
from tests.cluster.servers import LocalCluster
from tests.conftest import OPERATOR_TOKEN, agent_token, auth
from tests.coordinator import flows
from tests.coordinator.sse import Stream
from tests.helpers import job_body, wait_for

Client = TestClient[Any, Any]
HEALTHY = {"reachable": True, "jammed": False, "cover_open": False, "paper": "ok"}


def _venue_keys_per_node(cluster: LocalCluster, venue: str) -> list[int]:
    """How many of the venue's keys each node holds (plain connection per node)."""
    counts = []
    for node in cluster.nodes:
        client = sync_redis.Redis(port=node.port, password=node.password)
        try:
            counts.append(sum(1 for _ in client.scan_iter(match=VenueKeys(venue).prefix + "*")))
        finally:
            client.close()
    return counts


def _forget_scripts(cluster: LocalCluster) -> None:
    """What a master restarted without its scripts, or a promoted replica, knows."""
    for node in cluster.nodes:
        client = sync_redis.Redis(port=node.port, password=node.password)
        try:
            client.script_flush()
        finally:
            client.close()


async def _core_flow(client: Client) -> None:
    # submit → lease → start → ack, followed by a kiosk on the job events
    events = Stream(await client.get("/v1/events", headers=flows.KIOSK))
    created = await flows.submit(client)
    leased = await flows.lease_one(client)
    assert leased["job_id"] == created["job_id"]
    await flows.start(client, created["job_id"], leased["lease_id"])
    await flows.ack(client, created["job_id"], leased["lease_id"])
    assert (await flows.get_job(client, created["job_id"]))["state"] == "printed"
    told = [(e["job_id"], e["state"]) for e in await events.job_events(4)]
    assert told == [(created["job_id"], s) for s in ("queued", "leased", "printing", "printed")]
    events.response.close()
    # the same scan sent twice is one job
    body = job_body()
    first = await flows.expect(await client.post("/v1/jobs", json=body, headers=flows.KIOSK), 201)
    again = await flows.expect(await client.post("/v1/jobs", json=body, headers=flows.KIOSK), 200)
    assert again["job_id"] == first["job_id"] and again["duplicate"] is True
    # priority first, then arrival; a canceled job leaves the queue
    low = (await flows.submit(client, priority=500))["job_id"]
    urgent = (await flows.submit(client, priority=1))["job_id"]
    canceled = (await flows.submit(client, priority=1))["job_id"]
    assert (await flows.cancel(client, canceled))["state"] == "canceled"
    assert await flows.queue_ids(client) == [urgent, first["job_id"], low]
    # the operator's reports read the venue through transactions on its master
    stats = await flows.expect(await client.get("/v1/stats", headers=flows.OPERATOR), 200)
    assert stats["totals"]["printed"] == 1, stats
    reconcile = await flows.expect(await client.get("/v1/reconcile", headers=flows.OPERATOR), 200)
    assert reconcile["counts"]["unaccounted"] == 0, reconcile


async def test_two_venues_on_different_masters_run_the_core_flow(
    cluster: LocalCluster, venues: tuple[str, str], make_venue: MakeVenue
) -> None:
    # GIVEN two venues whose slots are served by two different masters
    masters = [cluster.master_of(venue) for venue in venues]
    assert masters[0] != masters[1]
    clients = [await make_venue(venue) for venue in venues]
    # AND masters that have forgotten the scripts the coordinators already used (as
    # after a restart or a failover): EVALSHA meets NOSCRIPT and loads them again
    for client in clients:
        await flows.expect(await client.get("/v1/reconcile", headers=flows.OPERATOR), 200)
    _forget_scripts(cluster)
    # WHEN each runs the core flow, at the same time
    await asyncio.gather(*[_core_flow(client) for client in clients])
    # THEN each venue's keys all sit on its own master, and nowhere else
    for venue, master in zip(venues, masters, strict=True):
        counts = _venue_keys_per_node(cluster, venue)
        assert counts[master] > 0 and sum(counts) == counts[master], counts


async def test_a_long_poll_wakes_on_a_cluster(
    venues: tuple[str, str], make_venue: MakeVenue
) -> None:
    client = await make_venue(venues[0])
    hub = client.app[COORDINATOR].wakeups
    # GIVEN an agent parked in a long-poll on an empty queue
    poll = asyncio.create_task(flows.lease(client, wait=10))
    await wait_for(lambda: _true(hub.waiting("printer-a") == 1), timeout_s=5)
    # WHEN a kiosk submits a job for that printer
    created = await flows.submit(client)
    # THEN the long-poll returns with it well before its 10 s wait is over
    done, _ = await asyncio.wait({poll}, timeout=5)
    assert poll in done, "the long-poll was not woken by the enqueue"
    assert [job["job_id"] for job in poll.result()] == [created["job_id"]]


async def _true(value: bool) -> bool:
    return value


async def test_an_expired_lease_returns_the_job_on_a_cluster(
    venues: tuple[str, str], make_venue: MakeVenue
) -> None:
    client = await make_venue(venues[1], lease_ttl_s=1.0)
    job_id = (await flows.submit(client))["job_id"]
    leased = await flows.lease_one(client)
    # WHEN the lease runs out without a start, THEN the scanner requeues the job
    await wait_for(lambda: _state_is(client, job_id, "queued"), timeout_s=10)
    refused = await flows.start(client, job_id, leased["lease_id"], status=409)
    assert refused["reason"] == "lease_revoked"


async def _state_is(client: Client, job_id: str, state: str) -> bool:
    return bool((await flows.get_job(client, job_id))["state"] == state)


async def beat(client: Client, printer_id: str, **health: Any) -> str:
    body = {"agent_id": f"pi-{printer_id}", "version": "test", "health": {**HEALTHY, **health}}
    response = await client.post(f"/v1/agents/{printer_id}/heartbeat", json=body,
                                 headers=auth(agent_token(printer_id)))  # fmt: skip
    state: str = (await flows.expect(response, 200))["state"]
    return state


async def test_a_dead_printer_fails_over_on_a_cluster(
    venues: tuple[str, str], make_venue: MakeVenue
) -> None:
    client = await make_venue(venues[0])
    # GIVEN two healthy printers and three jobs queued on printer-a
    await beat(client, "printer-a")
    await beat(client, "printer-b")
    ids = [(await flows.submit(client))["job_id"] for _ in range(3)]
    # WHEN printer-a jams
    assert await beat(client, "printer-a", jammed=True) == "dead"
    # THEN one decision moves its queue to printer-b, in order
    decisions = await wait_for(lambda: _failovers(client), timeout_s=10)
    assert len(decisions) == 1 and decisions[0]["dead_printer_id"] == "printer-a"
    assert (await flows.queue_ids(client, "printer-b"))[:3] == ids


async def _failovers(client: Client) -> list[Any]:
    response = await client.get("/v1/failovers", headers=auth(OPERATOR_TOKEN))
    found: list[Any] = (await flows.expect(response, 200))["items"]
    return found


async def test_redis_mode_must_match_the_server(
    cluster: LocalCluster, redis_server: EmbeddedRedis, tmp_path: Path
) -> None:
    settings = cluster_settings(cluster, "hall-check", tmp_path)
    # a cluster node named as a single server: refused, with the setting to change
    standalone = settings.model_copy(update={"redis_mode": "standalone"})
    with pytest.raises(ConfigError, match='redis_mode = "cluster"'):
        async with connected(standalone, cluster.url):
            pass
    # a single server named as a cluster: refused
    with pytest.raises(ConfigError, match="not a cluster node"):
        async with connected(settings, redis_server.url):
            pass
