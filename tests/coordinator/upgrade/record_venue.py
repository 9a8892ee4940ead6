"""Record a venue in the middle of an event, as a release wrote it to Redis.

    .venv/bin/python -m tests.coordinator.upgrade.record_venue \
        tests/coordinator/upgrade/format1_venue.json

Drives a real coordinator (this checkout's code, on an embedded Redis) through
the HTTP API until its jobs sit in every state a venue holds mid-event, then
writes every key of the venue (type, value, time to live) and each job's view
as `GET /v1/jobs/{id}` answered it. `test_format_upgrade.py` loads the file into
a fresh Redis and starts the current coordinator on it.

The committed file was recorded by the release that stored each job's payload
as separate hash fields (data format 1), before the payload became one JSON
field; re-record only to add a state, and from a checkout of that release.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient, TestServer
from redis.asyncio import Redis

from badgeline.coordinator.app import create_app
from badgeline.coordinator.config import CoordinatorSettings
from badgeline.coordinator.store.embedded import EmbeddedRedis
from badgeline.coordinator.store.keys import VenueKeys
from tests.conftest import test_tokens
from tests.coordinator import flows
from tests.helpers import job_body

VENUE = "recorded"
PRINTERS = ("printer-a", "printer-b", "printer-c")
# Every state a job can hold mid-event (`held` needs failover_policy = "hold").
EVERY_STATE = {"queued", "leased", "printing", "printed", "failed", "retrying", "canceled",
               "parked", "dead_lettered"}  # fmt: skip


async def _job(client: flows.Client, target: str = "printer-a", **body: Any) -> str:
    accepted = await flows.submit(client, **job_body(printer_target=target, **body))
    job_id: str = accepted["job_id"]
    return job_id


async def _lease(client: flows.Client, job_id: str, printer_id: str) -> str:
    leased = await flows.lease_one(client, printer_id)
    assert leased["job_id"] == job_id, leased
    lease_id: str = leased["lease_id"]
    return lease_id


async def _drive(client: flows.Client) -> dict[str, dict[str, Any]]:
    """Jobs in every mid-event state; what a test needs to finish each one."""
    for printer_id in PRINTERS:
        await flows.heartbeat(client, printer_id)
    jobs: dict[str, dict[str, Any]] = {}

    printed = await _job(client)
    await flows.start(client, printed, lease_id := await _lease(client, printed, "printer-a"))
    await flows.ack(client, printed, lease_id)
    jobs[printed] = {"state": "printed"}

    canceled = await _job(client)
    await flows.cancel(client, canceled)
    jobs[canceled] = {"state": "canceled"}

    failed = await _job(client)
    lease_id = await _lease(client, failed, "printer-a")
    await flows.start(client, failed, lease_id)
    await flows.ack(client, failed, lease_id, result="failed", error="not a PDF",
                    reason="not_a_pdf")  # fmt: skip
    jobs[failed] = {"state": "failed"}

    retrying = await _job(client)
    lease_id = await _lease(client, retrying, "printer-a")
    await flows.start(client, retrying, lease_id)
    await flows.ack(client, retrying, lease_id, result="failed", error="timed out",
                    reason="fetch_timeout")  # fmt: skip
    jobs[retrying] = {"state": "retrying"}

    printing = await _job(client)
    lease_id = await _lease(client, printing, "printer-a")
    fence = (await flows.start(client, printing, lease_id))["fence"]
    jobs[printing] = {"state": "printing", "lease_id": lease_id, "fence": fence,
                      "printer_id": "printer-a"}  # fmt: skip

    leased = await _job(client, "printer-b")
    jobs[leased] = {"state": "leased", "lease_id": await _lease(client, leased, "printer-b")}

    for priority in (100, 5):  # two queued, the second ahead of the first
        jobs[await _job(client, "printer-b", priority=priority)] = {"state": "queued"}
    jobs[await _job(client, "pool:default")] = {"state": "queued"}

    reprint = await client.post(f"/v1/jobs/{printed}/reprint", json={"reason": "torn"},
                                headers=flows.OPERATOR)  # fmt: skip
    jobs[(await flows.expect(reprint, 201))["job_id"]] = {"state": "queued"}

    # printer-c dies (jammed): its job is parked, no peer named for a named target.
    await flows.heartbeat(client, "printer-c", jammed=True)
    parked = await _job(client, "printer-c")
    jobs[parked] = {"state": (await flows.get_job(client, parked))["state"]}

    # A queue at its high-water mark sheds the next job into the dead letters.
    while True:
        answer = await client.post("/v1/jobs", json=job_body(printer_target="printer-a"),
                                   headers=flows.KIOSK)  # fmt: skip
        body = await answer.json()
        jobs[body["job_id"]] = {"state": "queued" if answer.status == 201 else "dead_lettered"}
        if answer.status == 503:
            break
    return jobs


async def _dump(redis: Redis, prefix: str) -> list[dict[str, Any]]:
    keys = []
    async for raw in redis.scan_iter(match=prefix + "*", count=1000):
        key = raw.decode()
        kind = (await redis.type(key)).decode()
        value: Any
        if kind == "string":
            value = (await redis.get(key)).decode()
        elif kind == "hash":
            value = {k.decode(): v.decode() for k, v in (await redis.hgetall(key)).items()}
        elif kind == "set":
            value = sorted(m.decode() for m in await redis.smembers(key))
        elif kind == "list":
            value = [m.decode() for m in await redis.lrange(key, 0, -1)]
        elif kind == "zset":
            value = [[m.decode(), s] for m, s in await redis.zrange(key, 0, -1, withscores=True)]
        else:
            raise ValueError(f"{key}: a {kind} key this recorder cannot write")
        keys.append({"key": key, "type": kind, "value": value, "pttl": await redis.pttl(key)})
    return sorted(keys, key=lambda k: k["key"])


async def record(out: Path) -> None:
    with tempfile.TemporaryDirectory() as folder:
        server = EmbeddedRedis(Path(folder) / "redis", appendfsync="everysec")
        server.start()
        redis = Redis.from_url(server.url)
        settings = CoordinatorSettings(
            venue=VENUE, redis_url=server.url, state_dir=Path(folder) / "state",
            tokens=test_tokens(), mdns=False, high_water_mark=4, ack_grace_s=3600,
            spill_named_targets=False, pools={"desk-c": ["printer-c"]},
            retry_backoff_unit_s=60, lease_ttl_s=3600,
        )  # fmt: skip
        client: flows.Client = TestClient(TestServer(create_app(settings, redis)))
        await client.start_server()
        try:
            jobs = await _drive(client)
            views = {job_id: await flows.get_job(client, job_id) for job_id in jobs}
            for job_id, job in jobs.items():  # the loops may have moved a job on since
                job["state"] = views[job_id]["state"]
            held = {job["state"] for job in jobs.values()}
            assert held >= EVERY_STATE, f"no job is {sorted(EVERY_STATE - held)}"
        finally:
            await client.close()
        dump = await _dump(redis, VenueKeys(VENUE).prefix)
        await redis.aclose()
        server.stop()
    out.write_text(json.dumps({"venue": VENUE, "jobs": jobs, "views": views, "keys": dump},
                              indent=1, sort_keys=True) + "\n")  # fmt: skip


if __name__ == "__main__":
    asyncio.run(record(Path(sys.argv[1])))
