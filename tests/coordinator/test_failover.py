"""Failover in the coordinator: a dead printer's work moves exactly once
(invariant 7). Agents are played through the real HTTP API here; the
process-level tests with emulators count prints at the printers."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from aiohttp.test_utils import TestClient
from redis.asyncio import Redis

from badgeline.coordinator.app import create_app
from badgeline.coordinator.config import CoordinatorSettings
from badgeline.coordinator.control.failover import FailoverController
from badgeline.coordinator.store import Store
from badgeline.coordinator.store.keys import VenueKeys
from tests.conftest import KIOSK_TOKEN, OPERATOR_TOKEN, agent_token, auth
from tests.coordinator.conftest import MakeClient
from tests.helpers import job_body, wait_for

OPS = auth(OPERATOR_TOKEN)
HEALTHY = {"reachable": True, "jammed": False, "cover_open": False, "paper": "ok"}


@pytest.fixture
async def fleet(
    aiohttp_client: Any, settings: CoordinatorSettings, redis: Redis
) -> TestClient[Any, Any]:
    # Long heartbeat interval: these tests drive health by explicit heartbeats.
    tuned = settings.model_copy(update={"heartbeat_interval_s": 30.0, "ack_grace_s": 1.0,
                                        "monitor_interval_s": 0.05})  # fmt: skip
    client: TestClient[Any, Any] = await aiohttp_client(create_app(tuned, redis))
    return client


async def beat(client: TestClient[Any, Any], printer_id: str, **health: Any) -> str:
    body = {"agent_id": f"pi-{printer_id}", "version": "test", "health": {**HEALTHY, **health}}
    response = await client.post(f"/v1/agents/{printer_id}/heartbeat", json=body,
                                 headers=auth(agent_token(printer_id)))  # fmt: skip
    assert response.status == 200
    state: str = (await response.json())["state"]
    return state


async def submit(client: TestClient[Any, Any], printer_id: str, n: int) -> list[str]:
    ids = []
    for _ in range(n):
        response = await client.post(
            "/v1/jobs", json=job_body(printer_id), headers=auth(KIOSK_TOKEN)
        )
        assert response.status == 201
        ids.append((await response.json())["job_id"])
    return ids


async def lease(client: TestClient[Any, Any], printer_id: str) -> dict[str, Any]:
    response = await client.post(f"/v1/agents/{printer_id}/lease?max=1",
                                 headers=auth(agent_token(printer_id)))  # fmt: skip
    jobs = (await response.json())["jobs"]
    assert len(jobs) == 1
    leased: dict[str, Any] = jobs[0]
    return leased


async def job(client: TestClient[Any, Any], job_id: str) -> dict[str, Any]:
    found: dict[str, Any] = await (await client.get(f"/v1/jobs/{job_id}", headers=OPS)).json()
    return found


async def test_jammed_printer_fails_over_once(
    fleet: TestClient[Any, Any],
    caplog: pytest.LogCaptureFixture,
    redis: Redis,
    settings: CoordinatorSettings,
) -> None:
    caplog.set_level(logging.INFO, logger="badgeline.events")
    # GIVEN two healthy printers and five jobs on printer-a, one printing, one leased
    await beat(fleet, "printer-a")
    await beat(fleet, "printer-b")
    ids = await submit(fleet, "printer-a", 5)
    printing = await lease(fleet, "printer-a")
    start = await fleet.post(f"/v1/agents/printer-a/jobs/{printing['job_id']}/start",
                             json={"lease_id": printing["lease_id"]},
                             headers=auth(agent_token("printer-a")))  # fmt: skip
    assert start.status == 200
    leased = await lease(fleet, "printer-a")
    # WHEN printer-a reports a jam
    assert await beat(fleet, "printer-a", jammed=True) == "dead"
    # THEN one decision moves the queued and leased jobs to printer-b, in order
    decisions = await wait_for(lambda: _decisions(fleet), timeout_s=10)
    assert len(decisions) == 1
    decision = decisions[0]
    assert decision["dead_printer_id"] == "printer-a"
    assert sorted(decision["drained_job_ids"]) == sorted(j for j in ids if j != printing["job_id"])
    assert decision["inflight_job_ids"] == [printing["job_id"]]
    peek = await (await fleet.get("/v1/queues/printer-b?limit=10", headers=OPS)).json()
    moved = [j["job_id"] for j in peek["items"]]
    assert moved[:4] == [j for j in ids if j != printing["job_id"]]
    # AND the moved leased job no longer counts as printer-a's load when routing
    assert await redis.smembers(VenueKeys(settings.venue).leased("printer-a")) == set()
    # AND each move left a traced log line (invariant 8)
    moves = [r.fields for r in caplog.records if r.getMessage() == "job_failed_over"]  # type: ignore[attr-defined]
    assert sorted(m["job_id"] for m in moves) == sorted(decision["drained_job_ids"])
    assert all(m["printer_id"] == "printer-b" and m["idempotency_key"].startswith("scan-")
               and m["correlation_id"] for m in moves)  # fmt: skip
    # AND the old lease can no longer start
    refused = await fleet.post(f"/v1/agents/printer-a/jobs/{leased['job_id']}/start",
                               json={"lease_id": leased["lease_id"]},
                               headers=auth(agent_token("printer-a")))  # fmt: skip
    assert refused.status == 409
    # AND after the ack grace period the unacked in-flight job is re-dispatched, flagged
    redispatched = await wait_for(lambda: _job_if(fleet, printing["job_id"], "queued"))
    assert redispatched["possible_duplicate"] is True
    assert redispatched["printer_id"] == "printer-b"
    # AND replaying changes nothing: still one decision
    assert len(await _decisions(fleet)) == 1


async def test_late_ack_within_grace_is_not_reprinted(fleet: TestClient[Any, Any]) -> None:
    await beat(fleet, "printer-a")
    await beat(fleet, "printer-b")
    [job_id] = await submit(fleet, "printer-a", 1)
    leased = await lease(fleet, "printer-a")
    await fleet.post(f"/v1/agents/printer-a/jobs/{job_id}/start",
                     json={"lease_id": leased["lease_id"]},
                     headers=auth(agent_token("printer-a")))  # fmt: skip
    assert await beat(fleet, "printer-a", cover_open=True) == "dead"
    await wait_for(lambda: _decisions(fleet))
    # WHEN the agent's journaled ack arrives inside the grace period
    ack = await fleet.post(f"/v1/agents/printer-a/jobs/{job_id}/ack",
                           json={"lease_id": leased["lease_id"], "result": "printed"},
                           headers=auth(agent_token("printer-a")))  # fmt: skip
    assert ack.status == 200
    decisions = await wait_for(lambda: _resolved(fleet))
    # THEN the check finds it acked and nothing is reprinted
    assert decisions[0]["inflight_resolution"] == {job_id: "acked"}
    final = await job(fleet, job_id)
    assert final["state"] == "printed" and final["possible_duplicate"] is False


async def test_a_print_elsewhere_after_an_uncertain_report_is_not_called_acked(
    aiohttp_client: Any, settings: CoordinatorSettings, redis: Redis
) -> None:
    # A long grace, fast-forwarded below: the check must run after printer-b's print.
    tuned = settings.model_copy(update={"heartbeat_interval_s": 30.0, "ack_grace_s": 600.0,
                                        "monitor_interval_s": 0.05})  # fmt: skip
    fleet: TestClient[Any, Any] = await aiohttp_client(create_app(tuned, redis))
    await beat(fleet, "printer-a")
    await beat(fleet, "printer-b")
    [job_id] = await submit(fleet, "printer-a", 1)
    leased = await lease(fleet, "printer-a")
    a_token = auth(agent_token("printer-a"))
    await fleet.post(f"/v1/agents/printer-a/jobs/{job_id}/start",
                     json={"lease_id": leased["lease_id"]}, headers=a_token)  # fmt: skip
    assert await beat(fleet, "printer-a", cover_open=True) == "dead"
    await wait_for(lambda: _decisions(fleet))
    # WHEN printer-a's agent cannot tell whether it printed, and printer-b prints the job
    ack = await fleet.post(f"/v1/agents/printer-a/jobs/{job_id}/ack",
                           json={"lease_id": leased["lease_id"], "result": "uncertain",
                                 "error": "cover opened mid-badge"}, headers=a_token)  # fmt: skip
    assert ack.status == 200
    await beat(fleet, "printer-b")
    again = await wait_for(lambda: _lease_if_any(fleet, "printer-b"))
    b_token = auth(agent_token("printer-b"))
    await fleet.post(f"/v1/agents/printer-b/jobs/{job_id}/start",
                     json={"lease_id": again["lease_id"]}, headers=b_token)  # fmt: skip
    await fleet.post(f"/v1/agents/printer-b/jobs/{job_id}/ack",
                     json={"lease_id": again["lease_id"], "result": "printed"},
                     headers=b_token)  # fmt: skip
    assert (await job(fleet, job_id))["state"] == "printed"
    await redis.zadd(VenueKeys(settings.venue).inflight_checks, {job_id: 0})  # grace is over
    # THEN the acknowledgement check says where it was printed, not that printer-a acked it
    decisions = await wait_for(lambda: _resolved(fleet))
    assert decisions[0]["inflight_resolution"] == {job_id: "printed_elsewhere"}


async def _lease_if_any(client: TestClient[Any, Any], printer_id: str) -> dict[str, Any] | None:
    response = await client.post(f"/v1/agents/{printer_id}/lease?max=1&wait=0",
                                headers=auth(agent_token(printer_id)))  # fmt: skip
    jobs = (await response.json())["jobs"]
    return jobs[0] if jobs else None


async def test_no_healthy_target_parks_then_dispatches(fleet: TestClient[Any, Any]) -> None:
    await beat(fleet, "printer-a")
    await beat(fleet, "printer-b", paper="out")
    ids = await submit(fleet, "printer-a", 3)
    await beat(fleet, "printer-a", jammed=True)
    for job_id in ids:
        await wait_for(lambda j=job_id: _job_if(fleet, j, "parked"))
    # WHEN printer-b recovers (three healthy heartbeats)
    for _ in range(3):
        await beat(fleet, "printer-b")
    # THEN the parked jobs go to it, in order
    for job_id in ids:
        found = await wait_for(lambda j=job_id: _job_if(fleet, j, "queued"))
        assert found["printer_id"] == "printer-b"


async def test_pause_resume_and_drain_by_hand(fleet: TestClient[Any, Any]) -> None:
    await beat(fleet, "printer-a")
    await beat(fleet, "printer-b")
    ids = await submit(fleet, "printer-a", 4)
    paused = await fleet.post("/v1/printers/printer-a/pause", json={"for_s": 60}, headers=OPS)
    assert (await paused.json())["paused"] is True
    empty = await fleet.post("/v1/agents/printer-a/lease?max=1",
                             headers=auth(agent_token("printer-a")))  # fmt: skip
    assert (await empty.json())["jobs"] == []
    drained = await (await fleet.post("/v1/printers/printer-a/drain", json={}, headers=OPS)).json()
    assert drained["drained_job_ids"] == ids
    resumed = await fleet.post("/v1/printers/printer-a/resume", headers=OPS)
    assert (await resumed.json())["paused"] is False
    printers = await (await fleet.get("/v1/printers", headers=OPS)).json()
    depth = {p["printer_id"]: p["queue_depth"] for p in printers["items"]}
    assert depth == {"printer-a": 0, "printer-b": 4}


async def test_rebalance_moves_the_tail_of_a_skewed_queue(fleet: TestClient[Any, Any]) -> None:
    for printer_id in ("printer-a", "printer-b", "printer-c"):
        await beat(fleet, printer_id)
    ids = await submit(fleet, "printer-a", 9)
    result = await (await fleet.post("/v1/rebalance", headers=OPS)).json()
    assert len(result["moved"]) == 6
    assert {m["job_id"] for m in result["moved"]} == set(ids[3:])
    printers = await (await fleet.get("/v1/printers", headers=OPS)).json()
    assert sorted(p["queue_depth"] for p in printers["items"]) == [3, 3, 3]


async def test_rebalance_keeps_jobs_in_their_printers_pool(make_client: MakeClient) -> None:
    pools = {"hall-a": ["printer-a", "printer-b"], "hall-b": ["printer-c"]}
    client = await make_client(pools=pools, heartbeat_interval_s=30.0)
    for printer_id in ("printer-a", "printer-b", "printer-c"):
        await beat(client, printer_id)
    ids = await submit(client, "printer-a", 6)
    result = await (await client.post("/v1/rebalance", headers=OPS)).json()
    # THEN the tail of printer-a's queue goes to its pool peer only, as a failover would
    assert {m["to"] for m in result["moved"]} == {"printer-b"}
    assert {m["job_id"] for m in result["moved"]} == set(ids[3:])
    printers = await (await client.get("/v1/printers", headers=OPS)).json()
    depth = {p["printer_id"]: p["queue_depth"] for p in printers["items"]}
    assert depth == {"printer-a": 3, "printer-b": 3, "printer-c": 0}


async def test_full_or_dead_printer_spills_to_a_healthy_peer(
    fleet: TestClient[Any, Any], settings: CoordinatorSettings
) -> None:
    await beat(fleet, "printer-a")
    await beat(fleet, "printer-b")
    # GIVEN printer-a at its high-water mark
    await submit(fleet, "printer-a", settings.high_water_mark)
    # WHEN one more job names printer-a
    response = await fleet.post("/v1/jobs", json=job_body("printer-a"), headers=auth(KIOSK_TOKEN))
    # THEN it is accepted on printer-b instead of being shed
    assert response.status == 201
    assert (await response.json())["printer_id"] == "printer-b"
    # AND once printer-a is dead and failed over (its backlog spread over the live
    # printers), a job naming it goes to a live one
    await beat(fleet, "printer-c")
    await beat(fleet, "printer-a", jammed=True)
    await wait_for(lambda: _decisions(fleet))
    response = await fleet.post("/v1/jobs", json=job_body("printer-a"), headers=auth(KIOSK_TOKEN))
    assert response.status == 201
    assert (await response.json())["printer_id"] in ("printer-b", "printer-c")


async def test_dead_printer_without_peers_parks_new_jobs(fleet: TestClient[Any, Any]) -> None:
    await beat(fleet, "printer-a", jammed=True)
    response = await fleet.post("/v1/jobs", json=job_body("printer-a"), headers=auth(KIOSK_TOKEN))
    assert response.status == 201
    body = await response.json()
    assert body["state"] == "parked"
    # WHEN printer-a comes back (three good heartbeats), THEN the job goes to it
    for _ in range(3):
        await beat(fleet, "printer-a")
    found = await wait_for(lambda: _job_if(fleet, body["job_id"], "queued"))
    assert found["printer_id"] == "printer-a"


async def _decisions(client: TestClient[Any, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = (await (await client.get("/v1/failovers", headers=OPS)).json())[
        "items"
    ]
    return found


async def _resolved(client: TestClient[Any, Any]) -> list[dict[str, Any]] | None:
    decisions = await _decisions(client)
    return decisions if decisions and decisions[0]["inflight_resolution"] else None


async def _job_if(client: TestClient[Any, Any], job_id: str, state: str) -> dict[str, Any] | None:
    found = await job(client, job_id)
    return found if found["state"] == state else None


async def test_coordinators_own_downtime_is_not_missed_heartbeats(
    fleet: TestClient[Any, Any], redis: Redis, settings: CoordinatorSettings
) -> None:
    # GIVEN a healthy printer whose last heartbeat is long ago because every
    # coordinator was down (simulated: the monitor's and the beat's clocks moved back)
    await beat(fleet, "printer-a")
    from badgeline.coordinator.store.keys import VenueKeys

    keys = VenueKeys(settings.venue)
    seconds, _ = await redis.time()
    long_ago = (int(seconds) - 3600) * 1000
    await redis.hset(keys.heartbeat_watch, mapping={"last_check_ms": long_ago, "resumed_ms": 0})
    await redis.hset(keys.printer("printer-a"), "last_heartbeat_ms", long_ago)
    # WHEN the monitor looks (it runs every 50 ms here), and a fresh beat arrives
    await wait_for(lambda: _watch_resumed(redis, keys.heartbeat_watch, long_ago))
    # THEN the printer was not declared dead for beats nobody could have received
    printers = await (await fleet.get("/v1/printers", headers=OPS)).json()
    assert printers["items"][0]["state"] == "healthy"
    assert await _decisions(fleet) == []


async def _watch_resumed(redis: Redis, key: str, long_ago: int) -> bool:
    resumed = await redis.hget(key, "resumed_ms")
    return resumed is not None and int(resumed) > long_ago


async def test_a_tick_runs_the_timer_scripts_only_when_the_fleet_read_found_work(
    redis: Redis, settings: CoordinatorSettings
) -> None:
    """The monitor ticks 10 times a second on every replica: resolve_inflight,
    promote_retries and unpark run only on a tick whose fleet read (check_heartbeats)
    found work for them. No app here, so no monitor of its own runs beside the test."""
    failover = FailoverController(Store(redis, settings), settings)
    keys = VenueKeys(settings.venue)
    seconds, _ = await redis.time()
    now_ms = int(seconds) * 1000
    # GIVEN a retry and an inflight check due in a minute, and nothing parked
    await redis.zadd(keys.retry, {"job-later": now_ms + 60_000})
    await redis.zadd(keys.inflight_checks, {"job-later": now_ms + 60_000})
    read = await failover.check_heartbeats()
    assert (read.inflight_due, read.retries_due, read.parked) == (False, False, False)
    # THEN a tick is one script call
    before = await _script_calls(redis)
    await failover.tick()
    assert await _script_calls(redis) - before == 1
    # WHEN both fall due and a job is parked THEN the read says so, for each
    await redis.zadd(keys.retry, {"job-later": now_ms - 1})
    await redis.zadd(keys.inflight_checks, {"job-later": now_ms - 1})
    await redis.zadd(keys.parked, {"job-parked": now_ms})
    read = await failover.check_heartbeats()
    assert (read.inflight_due, read.retries_due, read.parked) == (True, True, True)


async def _script_calls(redis: Redis) -> int:
    stats = await redis.info("commandstats")
    return sum(int(stats[name]["calls"]) for name in ("cmdstat_evalsha", "cmdstat_eval")
               if name in stats)  # fmt: skip
