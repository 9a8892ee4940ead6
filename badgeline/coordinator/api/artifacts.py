"""The artifact store: badge PDFs uploaded by kiosks, fetched by agents.

Content-addressed by SHA-256, so an upload is idempotent and an agent can
check that what it fetched is what the kiosk rendered. Bodies are read as a
stream with their own size limit (the JSON routes' limit is much smaller), and
pass the badge rules (badge_checks.py) before they are stored: a PDF no agent
would print is a 422 `badge_rejected` naming the reason.
"""

from __future__ import annotations

import hashlib
import logging
import re

from aiohttp import web

from badgeline.coordinator.api.context import authenticate
from badgeline.coordinator.api.http import json_response, refuse_declared_oversize
from badgeline.coordinator.control.badge_checks import (
    BadgeChecker,
    BadgeRejected,
    CheckerUnavailable,
)
from badgeline.log import log_event
from badgeline.protocol.errors import BadgelineError, ErrorCode

routes = web.RouteTableDef()

_NAME = re.compile(r"^([0-9a-f]{64})\.pdf$")
PDF_MAGIC = b"%PDF-"
CHECK_RETRY_AFTER_S = 2


def _sha256_of(request: web.Request) -> str:
    match = _NAME.match(request.match_info["name"])
    if match is None:
        raise BadgelineError(
            ErrorCode.NOT_FOUND, "artifacts are named <sha256 of the file, 64 hex digits>.pdf"
        )
    return match.group(1)


async def _read_limited(request: web.Request, limit: int) -> bytes:
    refuse_declared_oversize(request, limit, "a badge PDF (artifact_max_bytes)")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.content.iter_chunked(64 * 1024):
        size += len(chunk)
        if size > limit:
            raise BadgelineError(
                ErrorCode.BODY_TOO_LARGE, f"badge PDFs are limited to {limit} bytes"
            )
        chunks.append(chunk)
    return b"".join(chunks)


@routes.put("/v1/artifacts/{name}")
async def put_artifact(request: web.Request) -> web.Response:
    coordinator, identity = authenticate(request, "kiosk", "operator")
    sha256 = _sha256_of(request)
    body = await _read_limited(request, coordinator.settings.artifact_max_bytes)
    if not body.startswith(PDF_MAGIC):
        raise BadgelineError(ErrorCode.UNSUPPORTED_MEDIA_TYPE, "the body is not a PDF file")
    if hashlib.sha256(body).hexdigest() != sha256:
        raise BadgelineError(
            ErrorCode.VALIDATION_FAILED,
            "the body's SHA-256 does not match the name; name the file by its own hash",
        )
    await _check_badge(coordinator.badge_checker, body, sha256, identity.actor)
    created = await coordinator.store.artifacts.put(sha256, body)
    log_event("artifact_stored", sha256=sha256, size=len(body), actor=identity.actor,
              new=created)  # fmt: skip
    return json_response(
        {"ref": f"artifact://{sha256}.pdf", "sha256": sha256, "size": len(body)},
        status=201 if created else 200,
    )


async def _check_badge(checker: BadgeChecker, body: bytes, sha256: str, actor: str) -> None:
    """The badge rules, now: a PDF no agent would print is refused at upload."""
    try:
        await checker.check(body)
    except BadgeRejected as rejected:
        log_event("artifact_rejected", logging.WARNING, sha256=sha256, size=len(body),
                  actor=actor, reason=rejected.reason_code.value)  # fmt: skip
        raise BadgelineError(
            ErrorCode.BADGE_REJECTED, rejected.message, extra={"reason": rejected.reason_code.value}
        ) from None
    except CheckerUnavailable as error:
        log_event("badge_check_unavailable", logging.ERROR, sha256=sha256, error=str(error))
        raise BadgelineError(
            ErrorCode.BADGE_CHECK_UNAVAILABLE,
            "the badge could not be checked just now; upload it again shortly",
            retry_after_s=CHECK_RETRY_AFTER_S,
        ) from None


@routes.get("/v1/artifacts/{name}")
async def get_artifact(request: web.Request) -> web.Response:
    coordinator, _ = authenticate(request, "agent", "kiosk", "operator")
    sha256 = _sha256_of(request)
    body = await coordinator.store.artifacts.get(sha256)
    if body is None:
        raise BadgelineError(
            ErrorCode.NOT_FOUND, f"no artifact {sha256}.pdf (expired or never uploaded)"
        )
    return web.Response(body=body, content_type="application/pdf")
