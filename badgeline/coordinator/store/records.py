"""What every part of the store shares: the decoding of replies, the Redis clock,
who submitted a job, and the base of each concern's records.

Replies come back as bytes (the pool does not decode, to keep hiredis fast);
`text` is the one place they become strings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from badgeline.coordinator.config import CoordinatorSettings
from badgeline.coordinator.store.connection import RedisClient
from badgeline.coordinator.store.keys import VenueKeys
from badgeline.coordinator.store.script_loader import LoadedScript
from badgeline.protocol.errors import BadgelineError, ErrorCode

# The job hash fields JobOwner is read from, in this order (accept-7.lua returns
# the same three for a key it already holds).
OWNER_FIELDS = ("kiosk", "kiosk_group", "source")
_KIOSK_SOURCE = "kiosk:"


def text(value: Any) -> str:
    """A reply as a string; '' for a missing field."""
    if value is None:
        return ""
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def ms_of_time(reply: Any) -> int:
    """Milliseconds from a TIME reply: every timestamp comes from the Redis clock,
    the one clock every replica shares."""
    seconds, micros = reply
    return int(seconds) * 1000 + int(micros) // 1000


@dataclass(frozen=True)
class JobTrace:
    """What every log line about a job carries besides its id."""

    idempotency_key: str
    correlation_id: str


@dataclass(frozen=True)
class JobOwner:
    """Who submitted a job: the accept script records it on the job's hash."""

    kiosk: str = ""  # the submitting kiosk token's name; '' when no kiosk submitted it
    group: str = ""  # that kiosk's group when it submitted; '' for none

    @classmethod
    def from_fields(cls, kiosk: Any, group: Any, source: Any) -> JobOwner:
        """From the OWNER_FIELDS of a job hash (bytes, str or None when absent)."""
        if kiosk is None:  # recorded before submitters were: `source` names the token
            named = text(source)
            return cls(named.removeprefix(_KIOSK_SOURCE) if named.startswith(_KIOSK_SOURCE) else "")
        return cls(text(kiosk), text(group))

    @classmethod
    def from_hash(cls, fields: dict[Any, Any]) -> JobOwner:
        """From a job hash as HGETALL reads it."""
        named = {text(key): value for key, value in fields.items()}
        return cls.from_fields(*(named.get(name) for name in OWNER_FIELDS))


class IdempotencyConflict(BadgelineError):
    """The key names a job with another payload (JobRecords.accept); `owner` is that
    job's, so the caller can tell whether the asker may learn of it (its id is in
    `extra`)."""

    def __init__(self, message: str, job_id: str, owner: JobOwner) -> None:
        super().__init__(ErrorCode.IDEMPOTENCY_CONFLICT, message, extra={"job_id": job_id})
        self.owner = owner


class Records:
    """One concern's typed methods over the venue's Redis."""

    def __init__(
        self,
        redis: RedisClient,
        settings: CoordinatorSettings,
        keys: VenueKeys,
        scripts: dict[str, LoadedScript],
    ) -> None:
        self._redis = redis
        self.settings = settings
        self.keys = keys
        self._scripts = scripts

    async def _run(self, operation: str, keys: list[str], args: list[Any]) -> Any:
        return await self._scripts[operation](keys, args)

    async def _now_ms(self) -> int:
        return ms_of_time(await self._redis.time())

    async def _zset_after(
        self, key: str, after: tuple[float, str] | None, count: int
    ) -> list[tuple[str, float]]:
        """Up to `count` members of a sorted set in its order (score, then member),
        after the member `after` names by its (score, member): a position, not an
        offset, so that members added or removed meanwhile shift nothing."""
        if after is None:
            rows = await self._redis.zrange(key, 0, count - 1, withscores=True)
            return [(text(row[0]), float(row[1])) for row in rows]
        score, last = after
        bound = _score_text(score)
        async with self._redis.pipeline(transaction=True) as pipe:
            # Members of the same score are in member order: those after `last` first.
            pipe.zrange(key, bound, bound, byscore=True)
            pipe.zrange(key, "(" + bound, "+inf", byscore=True, offset=0, num=count,
                        withscores=True)  # fmt: skip
            ties, later = await pipe.execute()
        tied = [(text(member), float(score)) for member in ties if text(member) > last]
        return (tied + [(text(row[0]), float(row[1])) for row in later])[:count]


def _score_text(score: float) -> str:
    """A score as Redis reads it back exactly (an integral score without `.0`)."""
    return str(int(score)) if float(score).is_integer() else repr(float(score))
