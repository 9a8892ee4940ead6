"""Reading GET /v1/events as a client does: SSE records, over the real HTTP API."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from redis.asyncio import Redis

from badgeline.coordinator.store.keys import VenueKeys
from badgeline.protocol.events import JobEvent


@dataclass
class Record:
    """One SSE record: what came before a blank line."""

    id: str | None = None
    event: str | None = None
    data: str = ""
    comments: list[str] = field(default_factory=list)

    @property
    def job_event(self) -> dict[str, Any]:
        body: dict[str, Any] = json.loads(self.data)
        JobEvent.model_validate(body)  # the documented shape
        return body


class Stream:
    """An open event stream; `last_id` is what a client would resume from."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self.response = response
        self.last_id: str | None = None

    async def record(self, timeout_s: float = 10.0) -> Record:
        async def read() -> Record:
            record = Record()
            while True:
                raw = await self.response.content.readline()
                if not raw:
                    raise EOFError("the stream ended")
                line = raw.decode().rstrip("\n")
                if not line:
                    if record.id is not None:
                        self.last_id = record.id
                    return record
                name, _, value = line.partition(":")
                value = value.removeprefix(" ")
                if name == "":
                    record.comments.append(value)
                elif name == "id":
                    record.id = value
                elif name == "event":
                    record.event = value
                elif name == "data":
                    record.data += value

        return await asyncio.wait_for(read(), timeout_s)

    async def job_events(self, count: int, timeout_s: float = 10.0) -> list[dict[str, Any]]:
        """The next `count` job events, skipping keep-alives and resume points."""
        found: list[dict[str, Any]] = []
        while len(found) < count:
            record = await self.record(timeout_s)
            if record.event == "job":
                found.append(record.job_event)
        return found

    async def ended(self, timeout_s: float = 10.0) -> bool:
        """Whether the server ends the stream (EOF) within the time."""
        try:
            while True:
                await self.record(timeout_s)
        except EOFError:
            return True
        except TimeoutError:
            return False


async def stored_events(redis: Redis, venue: str) -> list[tuple[str, dict[str, str]]]:
    """Every event in the venue's stream, from Redis itself, oldest first."""
    entries = await redis.xrange(VenueKeys(venue).events, "-", "+")
    return [(entry_id.decode(), {k.decode(): v.decode() for k, v in fields.items()})
            for entry_id, fields in entries]  # fmt: skip
