"""Credentials and limits in Redis: dashboard sessions, enrolment codes and agent
tokens, request buckets and quotas.

Redis holds no secret here that could be presented: a session lives under the
SHA-256 of its cookie, a code under the SHA-256 of the code, an agent token as
its SHA-256 (the callers hash before they ask).
"""

from __future__ import annotations

import contextlib
import hashlib
from dataclasses import dataclass
from typing import Any

from redis.exceptions import RedisError

from badgeline.coordinator.store.records import Records, text


@dataclass(frozen=True)
class SessionRecord:
    proof: str  # HMAC of the cookie keyed by the signing token's digest (api/sessions.py)
    csrf_token: str | None
    expires_in_s: int


@dataclass(frozen=True)
class EnrolOutcome:
    outcome: str  # ok | invalid | used | expired | wrong_printer (enrol-3.lua)
    replaced: bool  # the agent had a token before: that one no longer works


@dataclass(frozen=True)
class AgentTokenRecord:
    sha256: str
    printer_id: str
    agent_id: str


@dataclass(frozen=True)
class Taken:
    """One take from a bucket (and quota): rate_limit-2.lua's answer."""

    admitted: bool
    retry_after_ms: int
    limit: str  # '' | 'rate' | 'quota': what refused it
    day: str  # the quota's day, for a refund


def _taken(reply: list[Any]) -> Taken:
    return Taken(bool(int(reply[0])), int(reply[1]), text(reply[2]), text(reply[4]))


class SessionRecords(Records):
    def _key(self, session_id: str) -> str:
        """Where Redis keeps a session: under the hash of its cookie, never the cookie."""
        return self.keys.session(hashlib.sha256(session_id.encode()).hexdigest())

    async def create(
        self, session_id: str, *, proof: str, csrf_token: str, created_at: int, ttl_s: int
    ) -> None:
        key = self._key(session_id)
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.hset(key, mapping={"proof": proof, "csrf": csrf_token, "created_at": created_at})
            pipe.expire(key, ttl_s)
            await pipe.execute()

    async def load(self, session_id: str) -> SessionRecord | None:
        key = self._key(session_id)
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.hgetall(key)
            pipe.ttl(key)
            fields, ttl = await pipe.execute()
        raw = {text(k): text(v) for k, v in fields.items()}
        if not raw:
            return None
        return SessionRecord(raw.get("proof", ""), raw.get("csrf"), max(int(ttl), 0))

    async def end(self, session_id: str) -> None:
        await self._redis.delete(self._key(session_id))


class EnrolmentRecords(Records):
    async def create_code(
        self, code_sha256: str, *, printer_id: str, ttl_ms: int, remember_used_ms: int,
        actor: str,
    ) -> int | None:  # fmt: skip
        """Record a new code; when it expires (ms), or None if that digest is taken."""
        created, expires_ms = await self._run(
            "enrolment_code",
            [self.keys.enrolment_code(code_sha256)],
            [printer_id, ttl_ms, remember_used_ms, actor],
        )
        return int(expires_ms) if int(created) else None

    async def enrol(
        self, code_sha256: str, token_sha256: str, *, printer_id: str, agent_id: str
    ) -> EnrolOutcome:
        """Trade the code for the token, once (enrol-3.lua marks the code used first)."""
        k = self.keys
        reply = await self._run(
            "enrol",
            [k.enrolment_code(code_sha256), k.agent_token(token_sha256),
             k.enrolled_agent(printer_id, agent_id)],
            [k.prefix, printer_id, agent_id, token_sha256],
        )  # fmt: skip
        outcome = text(reply[0])
        return EnrolOutcome(outcome, outcome == "ok" and bool(int(reply[2])))

    async def agent_token(self, token_sha256: str) -> AgentTokenRecord | None:
        fields = await self._redis.hmget(
            self.keys.agent_token(token_sha256), ["sha256", "printer_id", "agent_id"]
        )
        if any(f is None for f in fields):
            return None
        return AgentTokenRecord(*(text(f) for f in fields))


class ArtifactRecords(Records):
    async def put(self, sha256: str, body: bytes) -> bool:
        """Store a badge PDF under its hash for `artifact_ttl_s`; False when it was
        there already (its time then starts again)."""
        key, ttl_s = self.keys.artifact(sha256), self.settings.artifact_ttl_s
        created = await self._redis.set(key, body, ex=ttl_s, nx=True)
        if not created:
            await self._redis.expire(key, ttl_s)
        return bool(created)

    async def get(self, sha256: str) -> bytes | None:
        body = await self._redis.get(self.keys.artifact(sha256))
        return body.encode() if isinstance(body, str) else body


class LimitCounters(Records):
    async def take_kiosk(
        self, kiosk_name: str, *, rate_per_s: float, burst: int, quota: int
    ) -> Taken:
        """One request from the kiosk's bucket and, with `quota`, one job of its day."""
        k = self.keys
        reply = await self._run(
            "rate_limit",
            [k.rate_bucket(kiosk_name), k.rate_quota(kiosk_name)],
            ["take", rate_per_s, burst, quota],
        )
        return _taken(reply)

    async def refund_kiosk(self, kiosk_name: str, day: str) -> None:
        """Give back one job of that day's quota (the job was not accepted). Best
        effort: a refund lost to a Redis hiccup costs the kiosk one job of quota."""
        k = self.keys
        with contextlib.suppress(RedisError):
            await self._run(
                "rate_limit", [k.rate_bucket(kiosk_name), k.rate_quota(kiosk_name)], ["refund", day]
            )

    async def take_attempt(
        self, route: str, client: str, *, rate_per_s: float, burst: int
    ) -> Taken:
        """One attempt at a secret from this client address's bucket for the route."""
        key = self.keys.attempt_bucket(route, client)
        return _taken(await self._run("rate_limit", [key, key], ["take", rate_per_s, burst, 0]))

    async def return_attempt(
        self, route: str, client: str, *, rate_per_s: float, burst: int
    ) -> None:
        """Give back the attempt a take took: it succeeded, so it guessed nothing."""
        key = self.keys.attempt_bucket(route, client)
        await self._run("rate_limit", [key, key], ["return", rate_per_s, burst])
