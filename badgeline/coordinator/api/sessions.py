"""Dashboard sessions: a random secret the browser holds, which Redis holds only hashed.

The cookie is 32 random bytes (`secrets.token_urlsafe`). Redis keeps the session
under the SHA-256 of the cookie, never the cookie, so a key read from Redis
cannot be presented as one. The record holds no credential either: its `proof`
is an HMAC of the cookie keyed by the configured SHA-256 of the operator token
that signed in (auth.session_proof). That digest is in the coordinator's config
and nowhere in Redis, so whoever can read, or even write, Redis cannot make a
record that passes: copying a real session's fields under a cookie of their own
gives a proof that does not match it, and a record naming a token (its digest)
proves nothing. Each request checks the proof against the configured operator
tokens, so rotating a leaked token out of the config ends its sessions.

A cookie is an ambient credential, so a state-changing request authenticated by
it must also carry `X-CSRF-Token` equal to the session's CSRF token, which only
same-origin script can read (from `GET /dashboard/session`). Requests with an
`Authorization` header never look at the cookie: kiosks, agents and the CLI
work as without a dashboard.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import time
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from badgeline.coordinator.api.auth import Identity, session_proof, token_digest
from badgeline.coordinator.api.context import SESSION_IDENTITY, Coordinator, coordinator_of
from badgeline.coordinator.api.http import Handler
from badgeline.protocol.errors import BadgelineError, ErrorCode

SESSION_COOKIE = "badgeline_session"
CSRF_HEADER = "X-CSRF-Token"
# One event day; an operator signs in again the next morning.
SESSION_TTL_S = 12 * 3600
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# Sign-in has no session yet to take a CSRF token from, and grants nothing an
# attacker lacks: logging a victim in needs a valid operator token already.
CSRF_EXEMPT = frozenset({"/dashboard/login"})
_SESSION_ID = re.compile(r"^[A-Za-z0-9_-]{43}$")


@dataclass(frozen=True)
class Session:
    identity: Identity
    csrf_token: str
    expires_in_s: int


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def session_key(coordinator: Coordinator, session_id: str) -> str:
    """Where Redis keeps a session: under the hash of its cookie, never the cookie."""
    return coordinator.store.keys.session(hashlib.sha256(session_id.encode()).hexdigest())


async def create_session(coordinator: Coordinator, token: str) -> str:
    """A new session for this (operator) token; the cookie value, shown only to the browser."""
    session_id = secrets.token_urlsafe(32)
    key = session_key(coordinator, session_id)
    proof = session_proof(bytes.fromhex(token_digest(token)), session_id)
    async with coordinator.store.redis.pipeline(transaction=True) as pipe:
        pipe.hset(key, mapping={
            "proof": proof, "csrf": secrets.token_urlsafe(32), "created_at": int(time.time()),
        })  # fmt: skip
        pipe.expire(key, SESSION_TTL_S)
        await pipe.execute()
    return session_id


async def load_session(coordinator: Coordinator, session_id: str) -> Session | None:
    if not _SESSION_ID.match(session_id):
        return None
    redis, key = coordinator.store.redis, session_key(coordinator, session_id)
    raw = {_text(k): _text(v) for k, v in (await redis.hgetall(key)).items()}
    if not raw:
        return None
    identity = coordinator.auth.operator_of_session(session_id, raw.get("proof", ""))
    if identity is None or "csrf" not in raw:
        # Its token was rotated out of the config, or the record was not made here.
        await redis.delete(key)
        return None
    ttl = int(await redis.ttl(key))
    return Session(identity, raw["csrf"], max(ttl, 0))


async def end_session(coordinator: Coordinator, session_id: str) -> None:
    await coordinator.store.redis.delete(session_key(coordinator, session_id))


def _check_csrf(request: web.Request, session: Session) -> None:
    presented = request.headers.get(CSRF_HEADER, "").encode("utf-8", "surrogateescape")
    if not hmac.compare_digest(presented, session.csrf_token.encode()):
        raise BadgelineError(
            ErrorCode.FORBIDDEN,
            f"a request signed in by cookie must send the {CSRF_HEADER} header "
            "from GET /dashboard/session",
        )


@web.middleware
async def session_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Turn a valid session cookie into the operator identity `authenticate` uses."""
    session_id = request.cookies.get(SESSION_COOKIE)
    if session_id and "Authorization" not in request.headers:
        session = await load_session(coordinator_of(request), session_id)
        if session is not None:
            if request.method not in SAFE_METHODS and request.path not in CSRF_EXEMPT:
                _check_csrf(request, session)
            request[SESSION_IDENTITY] = session.identity
    return await handler(request)
