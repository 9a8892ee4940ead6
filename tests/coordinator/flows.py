"""Short, named steps of a job's life over the real HTTP API, shared by the
coordinator tests. Each step asserts the status it expects so that a test
reads as the story it tells."""

from __future__ import annotations

from typing import Any

from aiohttp import ClientResponse
from aiohttp.test_utils import TestClient
from redis.asyncio import Redis

from badgeline.coordinator.store.keys import VenueKeys
from tests.conftest import KIOSK_TOKEN, OPERATOR_TOKEN, agent_token, auth
from tests.helpers import job_body

Client = TestClient[Any, Any]
KIOSK = auth(KIOSK_TOKEN)
OPERATOR = auth(OPERATOR_TOKEN)


def agent(printer_id: str = "printer-a") -> dict[str, str]:
    return auth(agent_token(printer_id))


async def expect(response: ClientResponse, status: int) -> Any:
    body = await response.json()
    assert response.status == status, f"{response.status} != {status}: {body}"
    return body


async def submit(client: Client, status: int = 201, **overrides: Any) -> Any:
    return await expect(await client.post("/v1/jobs", json=job_body(**overrides), headers=KIOSK),
                        status)  # fmt: skip


async def get_job(client: Client, job_id: str) -> Any:
    return await expect(await client.get(f"/v1/jobs/{job_id}", headers=KIOSK), 200)


async def lease(
    client: Client, printer_id: str = "printer-a", *, wait: float = 0, max_jobs: int = 1
) -> list[Any]:
    response = await client.post(
        f"/v1/agents/{printer_id}/lease?wait={wait}&max={max_jobs}", headers=agent(printer_id)
    )
    jobs: list[Any] = (await expect(response, 200))["jobs"]
    return jobs


async def lease_one(client: Client, printer_id: str = "printer-a") -> Any:
    jobs = await lease(client, printer_id)
    assert len(jobs) == 1, jobs
    return jobs[0]


HEALTHY = {"reachable": True, "jammed": False, "cover_open": False, "paper": "ok"}


async def heartbeat(client: Client, printer_id: str = "printer-a", **health: Any) -> str:
    """One heartbeat from the printer's agent, healthy unless `health` says otherwise;
    returns the printer state the coordinator answers."""
    body = {"agent_id": f"pi-{printer_id}", "version": "test", "health": {**HEALTHY, **health}}
    response = await client.post(f"/v1/agents/{printer_id}/heartbeat", json=body,
                                 headers=agent(printer_id))  # fmt: skip
    state: str = (await expect(response, 200))["state"]
    return state


async def start(
    client: Client, job_id: str, lease_id: str, printer_id: str = "printer-a", status: int = 200
) -> Any:
    response = await client.post(
        f"/v1/agents/{printer_id}/jobs/{job_id}/start", json={"lease_id": lease_id},
        headers=agent(printer_id),
    )  # fmt: skip
    return await expect(response, status)


async def ack(
    client: Client, job_id: str, lease_id: str, result: str = "printed",
    printer_id: str = "printer-a", error: str | None = None, reason: str | None = None,
) -> Any:  # fmt: skip
    body: dict[str, Any] = {"lease_id": lease_id, "result": result}
    if error is not None:
        body["error"] = error
    if reason is not None:
        body["reason"] = reason
    response = await client.post(
        f"/v1/agents/{printer_id}/jobs/{job_id}/ack", json=body, headers=agent(printer_id)
    )
    return await expect(response, 200)


async def cancel(client: Client, job_id: str, status: int = 200) -> Any:
    return await expect(await client.post(f"/v1/jobs/{job_id}/cancel", headers=KIOSK), status)


async def queue_ids(client: Client, printer_id: str = "printer-a") -> list[str]:
    response = await client.get(f"/v1/queues/{printer_id}?limit=500", headers=OPERATOR)
    return [job["job_id"] for job in (await expect(response, 200))["items"]]


async def dead_letters(client: Client) -> list[Any]:
    response = await client.get("/v1/dead-letters", headers=OPERATOR)
    letters: list[Any] = (await expect(response, 200))["items"]
    return letters


async def redrive(client: Client, *job_ids: str) -> dict[str, Any]:
    body = {"ids": list(job_ids)} if job_ids else {}
    response = await client.post("/v1/dead-letters/redrive", json=body, headers=OPERATOR)
    return {r["job_id"]: r for r in (await expect(response, 200))["results"]}


def assert_error_shape(body: Any, code: str) -> None:
    """The one documented error body: a stable code, a message, field locations."""
    assert set(body["error"]) == {"code", "message", "fields"}, body
    assert body["error"]["code"] == code, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    for field in body["error"]["fields"]:
        assert set(field) == {"loc", "msg"} and isinstance(field["loc"], list), field


def without_attempts(snapshot: dict[str, Any]) -> dict[str, Any]:
    """A snapshot less the attempt counters of the routes where secrets are guessed
    (attempts.py), which every call to them spends, refused or not."""
    return {key: value for key, value in snapshot.items() if ":attempts:" not in key}


async def venue_snapshot(redis: Redis, venue: str) -> dict[str, Any]:
    """Every key of a venue with its type and content: equal snapshots = nothing written."""
    snapshot: dict[str, Any] = {}
    # The failover monitor's own bookkeeping changes on every tick, request or not;
    # the data format is marked at start-up, before any request.
    upkeep = {VenueKeys(venue).heartbeat_watch, VenueKeys(venue).data_format}
    async for raw in redis.scan_iter(match=VenueKeys(venue).prefix + "*", count=1000):
        key = raw.decode() if isinstance(raw, bytes) else str(raw)
        if key in upkeep:
            continue
        kind_raw = await redis.type(key)
        kind = kind_raw.decode() if isinstance(kind_raw, bytes) else str(kind_raw)
        readers = {
            "string": redis.get, "hash": redis.hgetall, "set": redis.smembers,
            "list": lambda k: redis.lrange(k, 0, -1),
            "zset": lambda k: redis.zrange(k, 0, -1, withscores=True),
            "stream": lambda k: redis.xrange(k, "-", "+"),  # the job events
        }  # fmt: skip
        snapshot[key] = (kind, await readers[kind](key))
    return snapshot
