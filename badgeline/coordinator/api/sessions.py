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

import hmac
import re
import secrets
import time
from dataclasses import dataclass

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


async def create_session(coordinator: Coordinator, token: str) -> str:
    """A new session for this (operator) token; the cookie value, shown only to the browser."""
    session_id = secrets.token_urlsafe(32)
    await coordinator.store.sessions.create(
        session_id, proof=session_proof(bytes.fromhex(token_digest(token)), session_id),
        csrf_token=secrets.token_urlsafe(32), created_at=int(time.time()), ttl_s=SESSION_TTL_S,
    )  # fmt: skip
    return session_id


async def load_session(coordinator: Coordinator, session_id: str) -> Session | None:
    if not _SESSION_ID.match(session_id):
        return None
    record = await coordinator.store.sessions.load(session_id)
    if record is None:
        return None
    identity = coordinator.auth.operator_of_session(session_id, record.proof)
    if identity is None or record.csrf_token is None:
        # Its token was rotated out of the config, or the record was not made here.
        await coordinator.store.sessions.end(session_id)
        return None
    return Session(identity, record.csrf_token, record.expires_in_s)


async def end_session(coordinator: Coordinator, session_id: str) -> None:
    await coordinator.store.sessions.end(session_id)


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
