"""The venue record_venue.py recorded with the previous release (data format 1)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from redis.asyncio import Redis

from badgeline.coordinator.store.keys import VenueKeys

RECORDED: dict[str, Any] = json.loads((Path(__file__).parent / "format1_venue.json").read_text())


async def restore_recorded_venue(redis: Redis, venue: str) -> None:
    """Write the recorded keys under `venue` (as the previous release left them)."""
    old, new = VenueKeys(RECORDED["venue"]).prefix, VenueKeys(venue).prefix
    for entry in RECORDED["keys"]:
        key, value = new + entry["key"].removeprefix(old), entry["value"]
        kind = entry["type"]
        if kind == "string":
            await redis.set(key, value, px=entry["pttl"] if entry["pttl"] > 0 else None)
        elif kind == "hash":
            await redis.hset(key, mapping=value)
        elif kind == "set":
            await redis.sadd(key, *value)
        elif kind == "list":
            await redis.rpush(key, *value)
        else:
            await redis.zadd(key, {member: score for member, score in value})
        if kind != "string" and entry["pttl"] > 0:
            await redis.pexpire(key, entry["pttl"])
