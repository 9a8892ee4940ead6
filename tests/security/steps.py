"""Named steps shared by the security tests (enrolment, refusals, Redis dumps)."""

from __future__ import annotations

from typing import Any

from aiohttp.test_utils import TestClient
from redis.asyncio import Redis

from badgeline.coordinator.store.keys import VenueKeys
from tests.coordinator import flows

Client = TestClient[Any, Any]


async def create_code(client: Client, printer_id: str = "printer-a", **extra: Any) -> Any:
    response = await client.post("/v1/enrolment-codes", json={"printer_id": printer_id, **extra},
                                 headers=flows.OPERATOR)  # fmt: skip
    return await flows.expect(response, 201)


async def enrol(client: Client, code: str, printer_id: str = "printer-a",
                agent_id: str = "pi-hall-a", status: int = 201) -> Any:  # fmt: skip
    response = await client.post(
        "/v1/enrol", json={"code": code, "printer_id": printer_id, "agent_id": agent_id}
    )
    return await flows.expect(response, status)


async def enrolled_token(client: Client, printer_id: str = "printer-a",
                         agent_id: str = "pi-hall-a") -> str:  # fmt: skip
    """An agent token issued through the whole enrolment flow."""
    code = (await create_code(client, printer_id))["code"]
    token: str = (await enrol(client, code, printer_id, agent_id))["agent_token"]
    return token


async def redis_dump(redis: Redis, venue: str) -> list[bytes]:
    """Every key of a venue and every value, field and member under it, as bytes."""
    found: list[Any] = []
    async for key in redis.scan_iter(match=VenueKeys(venue).prefix + "*", count=1000):
        found.append(key)
        kind_raw = await redis.type(key)
        kind = kind_raw.decode() if isinstance(kind_raw, bytes) else str(kind_raw)
        if kind == "string":
            found.append(await redis.get(key))
        elif kind == "hash":
            for field, value in (await redis.hgetall(key)).items():
                found += [field, value]
        elif kind == "list":
            found += await redis.lrange(key, 0, -1)
        elif kind == "set":
            found += list(await redis.smembers(key))
        elif kind == "zset":
            found += [pair[0] for pair in await redis.zrange(key, 0, -1, withscores=True)]
        elif kind == "stream":  # the job events
            found += [item for entry_id, fields in await redis.xrange(key, "-", "+")
                      for item in (entry_id, *fields.keys(), *fields.values())]  # fmt: skip
        else:
            raise AssertionError(f"{key!r} has a type this dump cannot read: {kind}")
    return [item if isinstance(item, bytes) else str(item).encode() for item in found]
