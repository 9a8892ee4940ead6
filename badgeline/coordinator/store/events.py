"""The venue's job events in Redis: the stream that transition() appends to.

Every state change of a job appends one entry to `VenueKeys.events`, inside the
script that makes the change (scripts/includes/common.lua), so the stream holds
each change once, in the order Redis ran them; an entry's id (`<ms>-<seq>`) is
where a reader resumes. Each replica reads it for GET /v1/events
(control/event_hub.py), and each webhook target reads it through a consumer group
of its own (control/webhooks.py), which hands an entry to one replica at a time.
The stream keeps `event_retention_s` of events (trimmed by age, approximately:
whole blocks of entries at a time), so a reader can resume that far back.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from redis.exceptions import ResponseError

from badgeline.coordinator.store.records import JobOwner, Records, text

_EVENT_ID = re.compile(r"^([0-9]{1,20})-([0-9]{1,20})$")
# The states whose event carries the classified reason of the failed attempt.
_FAILURE_STATES = frozenset({"retrying", "failed"})
_JSON = json.JSONEncoder(separators=(",", ":"))


def event_id_key(entry_id: str) -> tuple[int, int] | None:
    """A stream id as a comparable pair; None when it is not one (`<ms>-<seq>`)."""
    matched = _EVENT_ID.match(entry_id)
    if matched is None:
        return None
    return int(matched.group(1)), int(matched.group(2))


@dataclass(frozen=True)
class StoredEvent:
    """One entry of the stream: a job's state change."""

    id: str
    fields: dict[str, str]
    key: tuple[int, int] = field(compare=False)

    @classmethod
    def from_reply(cls, entry_id: Any, raw: dict[Any, Any] | list[Any]) -> StoredEvent:
        """From a reply's entry: its fields as redis-py parses them (a dict) or as a
        script returns them (a flat list of field, value)."""
        name = text(entry_id)
        pairs = raw.items() if isinstance(raw, dict) else zip(raw[::2], raw[1::2], strict=True)
        return cls(name, {text(k): text(v) for k, v in pairs}, event_id_key(name) or (0, 0))

    @property
    def job_id(self) -> str:
        return self.fields.get("job_id", "")

    @property
    def owner(self) -> JobOwner:
        """Who submitted the job (api/visibility.py decides who may see its events)."""
        return JobOwner(self.fields.get("kiosk", ""), self.fields.get("kiosk_group", ""))

    def body(self) -> dict[str, Any]:
        """The event as clients get it (protocol.events.JobEvent): the SSE `data` and
        a webhook's body. Who submitted the job stays out of it."""
        f = self.fields
        state = f.get("state", "")
        expires = f.get("expires_ms", "")
        return {
            "id": self.id,
            "job_id": self.job_id,
            "state": state,
            "previous_state": f.get("previous_state") or None,
            "printer_id": f.get("printer_id", ""),
            "attempts": int(f.get("attempts") or 0),
            "fence": int(f.get("fence") or 0),
            "possible_duplicate": f.get("possible_duplicate") == "1",
            "at": int(f.get("at_ms") or 0) / 1000,
            "created_at": int(f.get("created_ms") or 0) / 1000,
            "reason": f.get("reason", ""),
            "failure_reason": (f.get("failure_reason") or None) if state in _FAILURE_STATES
            else None,
            "idempotency_key": f.get("idempotency_key", ""),
            "expires_at": int(expires) / 1000 if expires else None,
        }  # fmt: skip

    def body_json(self) -> str:
        return _JSON.encode(self.body())


class Resume(StrEnum):
    """Whether a reader can resume after an event id (GET /v1/events, Last-Event-ID)."""

    OK = "ok"
    MALFORMED = "malformed"  # not `<ms>-<seq>`
    UNKNOWN = "unknown"  # no event of this venue has that id
    TRIMMED = "trimmed"  # events after it have left the stream (event_retention_s)


@dataclass(frozen=True)
class Claimed:
    """Webhook entries claimed for another attempt, and the ids given up on."""

    events: list[StoredEvent]
    dropped: list[str]


def _entries(reply: Any) -> list[StoredEvent]:
    return [StoredEvent.from_reply(entry_id, raw) for entry_id, raw in reply or [] if raw]


def _stream_entries(reply: Any) -> list[StoredEvent]:
    """The entries of an XREAD/XREADGROUP reply on one stream (RESP2 list or RESP3 map)."""
    if not reply:
        return []
    if isinstance(reply, dict):
        return [e for entries in reply.values() for e in _entries(entries[0] if
                isinstance(entries, list) and entries and isinstance(entries[0], list)
                else entries)]  # fmt: skip
    return [e for _, entries in reply for e in _entries(entries)]


class EventRecords(Records):
    # ------------------------------------------------------------------ readers

    async def last_id(self) -> str:
        """The id of the newest event ever written ('0-0' before the first): a reader
        starting now resumes from here."""
        info = await self._info()
        return text(info["last-generated-id"]) if info else "0-0"

    async def _info(self) -> dict[str, Any] | None:
        try:
            info: dict[str, Any] = await self._redis.xinfo_stream(self.keys.events)
        except ResponseError:  # no such key: no event was ever written
            return None
        return info

    async def check_resume(self, last_id: str) -> Resume:
        """Whether reading on after `last_id` misses nothing: it must be an event still
        in the stream, the newest ever written, or the start ('0-0') of a stream
        nothing was trimmed from. Trimming removes the oldest events only, so an id
        older than the oldest kept may have had events after it trimmed."""
        wanted = event_id_key(last_id)
        if wanted is None:
            return Resume.MALFORMED
        info = await self._info()
        if info is None:
            return Resume.UNKNOWN
        newest = event_id_key(text(info["last-generated-id"])) or (0, 0)
        if wanted > newest:
            return Resume.UNKNOWN
        if wanted == newest:
            return Resume.OK  # nothing came after it, whatever was trimmed
        trimmed = int(info.get("entries-added") or 0) > int(info.get("length") or 0)
        first = info.get("first-entry")
        oldest = event_id_key(text(first[0])) if first else None
        if trimmed and (oldest is None or wanted < oldest):
            return Resume.TRIMMED
        if wanted == (0, 0):
            return Resume.OK  # the start of a stream nothing was trimmed from
        found = await self._redis.xrange(self.keys.events, last_id, last_id, count=1)
        return Resume.OK if found else Resume.UNKNOWN

    async def after(self, after_id: str, count: int) -> list[StoredEvent]:
        """Up to `count` events after `after_id`, oldest first."""
        reply = await self._redis.xrange(self.keys.events, "(" + after_id, "+", count=count)
        return _entries(reply)

    async def wait_after(self, after_id: str, count: int, block_ms: int) -> list[StoredEvent]:
        """Events after `after_id`, waiting up to `block_ms` for the first (a connection
        of the pool is held meanwhile: one reader per process, control/event_hub.py)."""
        reply = await self._redis.xread({self.keys.events: after_id}, count=count, block=block_ms)
        return _stream_entries(reply)

    async def trim(self, retention_s: int) -> None:
        """Drop the events older than `retention_s` (Redis clock), in whole blocks."""
        oldest_kept = await self._now_ms() - retention_s * 1000
        await self._redis.xtrim(self.keys.events, minid=f"{oldest_kept}-0", approximate=True)

    # ------------------------------------------------------------------ webhook groups

    async def ensure_group(self, group: str) -> None:
        """The consumer group of a webhook target: a new one starts at the newest event."""
        try:
            await self._redis.xgroup_create(self.keys.events, group, id="$", mkstream=True)
        except ResponseError as error:
            if "BUSYGROUP" not in str(error):
                raise

    async def read_new(
        self, group: str, consumer: str, count: int, block_ms: int | None
    ) -> list[StoredEvent]:
        """Events no consumer of `group` was handed yet, now this consumer's."""
        reply = await self._redis.xreadgroup(
            group, consumer, {self.keys.events: ">"}, count=count, block=block_ms
        )
        return _stream_entries(reply)

    async def claim_due(
        self, group: str, consumer: str, count: int, *, attempt_ms: int, backoff_unit_ms: int,
        backoff_cap_ms: int, max_attempts: int,
    ) -> Claimed:  # fmt: skip
        """Entries whose last attempt failed (or whose consumer died) and whose back-off
        is over, claimed by this consumer; those out of attempts are given up."""
        reply = await self._run(
            "webhook_claim", [self.keys.events],
            [group, consumer, count, attempt_ms, backoff_unit_ms, backoff_cap_ms, max_attempts],
        )  # fmt: skip
        return Claimed(_entries(reply[0]), [text(entry_id) for entry_id in reply[1]])

    async def hold(self, group: str, consumer: str, entry_id: str) -> bool:
        """Restart the entry's idle time just before an attempt, if it is still this
        consumer's: False when another consumer has claimed it meanwhile."""
        held = await self._run("webhook_hold", [self.keys.events], [group, consumer, entry_id])
        return bool(held)

    async def ack(self, group: str, entry_ids: list[str]) -> None:
        if entry_ids:
            await self._redis.xack(self.keys.events, group, *entry_ids)

    async def prune_consumers(self, group: str, idle_ms: int, keep: str) -> int:
        """Forget consumers (replicas gone) idle that long with nothing pending."""
        pruned = 0
        for consumer in await self._redis.xinfo_consumers(self.keys.events, group):
            name = text(consumer.get("name"))
            if (
                name != keep
                and int(consumer.get("pending", 0)) == 0
                and (int(consumer.get("idle", 0)) >= idle_ms)
            ):
                await self._redis.xgroup_delconsumer(self.keys.events, group, name)
                pruned += 1
        return pruned
