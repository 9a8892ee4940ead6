"""Enrolment: an operator's single-use code becomes an agent token bound to a printer.

    operator  POST /v1/enrolment-codes {printer_id, ttl_s?}   -> {code, printer_id, expires_at}
    agent     POST /v1/enrol {code, printer_id, agent_id}     -> {agent_token, printer_id, agent_id}

Redis holds only SHA-256 digests: of the code (its key) and of the issued token
(its key and a field). The exchange is one Lua script (enrol-3.lua) that marks
the code used before it writes anything else, so two agents racing with one code
get one token between them. A used code is remembered until a while after it
expires, so its reuse is told `enrolment_code_used`, not "unknown".

Issued tokens are accepted like configured ones. `token_middleware` resolves the
Bearer token of every request once: configured digests are compared in constant
time (auth.TokenAuthority); any other token is looked up in Redis by its digest.
That lookup leaks nothing useful through timing: an attacker controls the token,
not its SHA-256, so learning how a digest compares tells them nothing about a
token. The stored digest is still compared with `hmac.compare_digest`. There is
no cache: a token replaced by re-enrolment stops working at once, everywhere.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from badgeline.coordinator.api.auth import Identity, bearer_digest
from badgeline.coordinator.api.context import (
    SESSION_IDENTITY,
    TOKEN_IDENTITY,
    Coordinator,
    authenticate,
    coordinator_of,
)
from badgeline.coordinator.api.http import Handler, json_response, read_model
from badgeline.log import log_event
from badgeline.protocol.errors import BadgelineError, ErrorCode
from badgeline.protocol.ids import PRINTER_ID_PATTERN
from badgeline.protocol.models import ResponseModel

routes = web.RouteTableDef()

CODE_PATTERN = r"^[A-Za-z0-9_-]{16,64}$"
AGENT_ID_PATTERN = r"^[\x21-\x7e]{1,64}$"  # printable ASCII, no spaces (host names fit)
MAX_CODE_TTL_S = 30 * 24 * 3600
# A used or expired code is remembered this long after its expiry.
REMEMBER_USED_MS = 7 * 24 * 3600 * 1000


class EnrolmentCodeRequest(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")
    printer_id: str = Field(pattern=PRINTER_ID_PATTERN)
    ttl_s: int | None = Field(
        default=None, ge=1, le=MAX_CODE_TTL_S,
        description="how long the code may be used; default enrolment_code_ttl_s",
    )  # fmt: skip


class EnrolmentCodeIssued(ResponseModel):
    code: str = Field(description="give it to the agent; the coordinator keeps only its hash")
    printer_id: str
    expires_at: float = Field(description="Unix time in seconds, from the Redis clock")


class EnrolRequest(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")
    code: str = Field(pattern=CODE_PATTERN)
    printer_id: str = Field(pattern=PRINTER_ID_PATTERN)
    agent_id: str = Field(pattern=AGENT_ID_PATTERN)


class EnrolResult(ResponseModel):
    agent_token: str = Field(description="the agent's Bearer token; shown once, stored hashed")
    printer_id: str
    agent_id: str
    replaced: bool = Field(description="a token issued earlier to this agent was revoked")


def _sha256_hex(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def code_id(code_sha256: str) -> str:
    """What logs call a code: a prefix of its digest, never the code."""
    return code_sha256[:12]


# --------------------------------------------------------------------------- routes


@routes.post("/v1/enrolment-codes")
async def create_code(request: web.Request) -> web.Response:
    coordinator, identity = authenticate(request, "operator")
    body = await read_model(request, EnrolmentCodeRequest)
    ttl_s = body.ttl_s or coordinator.settings.enrolment_code_ttl_s
    while True:
        code = secrets.token_urlsafe(18)  # 144 bits, 24 characters
        digest = _sha256_hex(code)
        expires_ms = await coordinator.store.enrolment.create_code(
            digest, printer_id=body.printer_id, ttl_ms=ttl_s * 1000,
            remember_used_ms=REMEMBER_USED_MS, actor=identity.actor,
        )  # fmt: skip
        if expires_ms is not None:
            break
    log_event("enrolment_code_created", code_id=code_id(digest), printer_id=body.printer_id,
              expires_at=int(expires_ms) / 1000, actor=identity.actor)  # fmt: skip
    issued = EnrolmentCodeIssued(
        code=code, printer_id=body.printer_id, expires_at=int(expires_ms) / 1000
    )
    return json_response(issued, status=201, headers={"Cache-Control": "no-store"})


_REFUSALS = {
    "invalid": (ErrorCode.ENROLMENT_CODE_INVALID, "this enrolment code is not known"),
    "used": (ErrorCode.ENROLMENT_CODE_USED, "this enrolment code was already used; ask an "
             "operator for a new one"),
    "expired": (ErrorCode.ENROLMENT_CODE_EXPIRED, "this enrolment code has expired; ask an "
                "operator for a new one"),
}  # fmt: skip


def _refusal(outcome: str, body: EnrolRequest) -> BadgelineError:
    if outcome == "wrong_printer":
        return BadgelineError(
            ErrorCode.ENROLMENT_CODE_INVALID,
            f"this enrolment code is for another printer, not {body.printer_id}",
        )
    code, message = _REFUSALS[outcome]
    return BadgelineError(code, message)


@routes.post("/v1/enrol")
async def enrol(request: web.Request) -> web.Response:
    coordinator = coordinator_of(request)
    body = await read_model(request, EnrolRequest)
    code_digest = _sha256_hex(body.code)
    token = secrets.token_urlsafe(32)
    enrolled = await coordinator.store.enrolment.enrol(
        code_digest, _sha256_hex(token), printer_id=body.printer_id, agent_id=body.agent_id
    )
    if enrolled.outcome != "ok":
        refusal = _refusal(enrolled.outcome, body)
        log_event("enrolment_refused", code_id=code_id(code_digest), printer_id=body.printer_id,
                  agent_id=body.agent_id, reason=str(refusal.code))  # fmt: skip
        raise refusal
    replaced = enrolled.replaced
    log_event("agent_enrolled", code_id=code_id(code_digest), printer_id=body.printer_id,
              agent_id=body.agent_id, replaced=replaced)  # fmt: skip
    result = EnrolResult(
        agent_token=token, printer_id=body.printer_id, agent_id=body.agent_id, replaced=replaced
    )
    return json_response(result, status=201, headers={"Cache-Control": "no-store"})


# --------------------------------------------------------------------------- tokens


async def enrolled_identity(coordinator: Coordinator, presented: bytes) -> Identity | None:
    """The agent an issued token belongs to, if Redis holds its digest."""
    record = await coordinator.store.enrolment.agent_token(presented.hex())
    if record is None or not hmac.compare_digest(record.sha256.encode(), presented.hex().encode()):
        return None
    return Identity(name=record.agent_id, role="agent", printer_id=record.printer_id)


@web.middleware
async def token_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Resolve the Bearer token once; `authenticate` and the limits use the result."""
    presented = bearer_digest(request.headers.get("Authorization"))
    if presented is not None and SESSION_IDENTITY not in request:
        coordinator = coordinator_of(request)
        identity = coordinator.auth.identify_digest(presented)
        if identity is None:
            identity = await enrolled_identity(coordinator, presented)
        if identity is not None:
            request[TOKEN_IDENTITY] = identity
    return await handler(request)


def install(app: web.Application) -> None:
    app.add_routes(routes)
    app.middlewares.append(token_middleware)
