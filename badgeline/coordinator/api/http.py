"""HTTP plumbing shared by every route: errors, bodies, correlation ids.

One middleware turns every failure into the documented error body, so no
handler (and no bad request) can produce a 500 with an HTML page.

Every JSON body is read by `read_model`, strictly: a declared Content-Length
over the limit is refused before a byte of the body is read (413), a body that
is not `application/json` is refused unread (415), and an object with a key
twice is refused (422) instead of letting the last one win silently, which
would let two readers of one body (a proxy, a log, this service) disagree on
what it says.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from aiohttp import web
from pydantic import BaseModel, ValidationError

from badgeline.coordinator.store import STORE_UNAVAILABLE
from badgeline.log import log_event
from badgeline.protocol.errors import BadgelineError, ErrorCode
from badgeline.protocol.ids import is_job_id

ModelT = TypeVar("ModelT", bound=BaseModel)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

CORRELATION_HEADER = "X-Correlation-ID"
# A 401 names the scheme to authenticate with (RFC 9110 §15.5.2, RFC 6750 §3).
AUTH_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="badgeline"'}
CORRELATION_ID = web.RequestKey("correlation_id", str)
JSON_MEDIA_TYPE = "application/json"
_UTF_8 = frozenset({"utf-8", "utf8"})
_CORRELATION_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
# One encoder for json.dumps(payload, default=str), which would build one per call.
_JSON = json.JSONEncoder(default=str)
_HTTP_CODES = {
    400: ErrorCode.MALFORMED_JSON,
    401: ErrorCode.UNAUTHORIZED,
    403: ErrorCode.FORBIDDEN,
    404: ErrorCode.NOT_FOUND,
    405: ErrorCode.METHOD_NOT_ALLOWED,
    413: ErrorCode.BODY_TOO_LARGE,
}


def correlation_id(request: web.Request) -> str:
    return request[CORRELATION_ID]


def job_id_param(request: web.Request) -> str:
    """The `{job_id}` of the path; anything not shaped like a job id is no job."""
    job_id = request.match_info["job_id"]
    if not is_job_id(job_id):
        raise BadgelineError(ErrorCode.NOT_FOUND, f"no job {job_id[:80]!r}")
    return job_id


def json_response(
    payload: Any, status: int = 200, headers: dict[str, str] | None = None
) -> web.Response:
    if isinstance(payload, BaseModel):
        text = payload.model_dump_json(by_alias=True)
    else:
        text = _JSON.encode(payload)
    return web.Response(text=text, status=status, content_type="application/json", headers=headers)


def error_response(error: BadgelineError, headers: dict[str, str] | None = None) -> web.Response:
    headers = dict(headers or {})
    if error.retry_after_s is not None:
        headers["Retry-After"] = str(error.retry_after_s)
    if error.code == ErrorCode.UNAUTHORIZED:
        headers = AUTH_CHALLENGE | headers
    return json_response(error.body(), status=error.http_status, headers=headers)


def refuse_declared_oversize(request: web.Request, limit: int, what: str) -> None:
    """413 now for a body whose Content-Length is over `limit`, before it is read:
    reading (and waiting for) 10 GB to count past the limit is what a client sending
    them wants. A chunked body is counted as it is read instead."""
    declared = request.content_length
    if declared is not None and declared > limit:
        raise BadgelineError(
            ErrorCode.BODY_TOO_LARGE,
            f"the request body declares {declared} bytes; {what} takes at most {limit}",
        )


def _sends_body(request: web.Request) -> bool:
    return request.body_exists and request.content_length != 0


def require_json_media_type(request: web.Request) -> None:
    """415 for a body that is not declared `application/json` (charset, if any, UTF-8:
    the only encoding JSON is exchanged in, RFC 8259 §8.1). No body needs no type."""
    if not _sends_body(request):
        return
    charset = request.charset
    if request.content_type != JSON_MEDIA_TYPE or (charset or "utf-8").lower() not in _UTF_8:
        declared = request.headers.get("Content-Type", "none")
        raise BadgelineError(
            ErrorCode.UNSUPPORTED_MEDIA_TYPE,
            f"send the body as Content-Type: {JSON_MEDIA_TYPE} (this one is {declared[:80]!r})",
        )


class _Pairs(list[tuple[str, Any]]):
    """A JSON object as json.loads read it: its (key, value) pairs, duplicates kept."""


def duplicate_key(raw: bytes) -> list[str | int] | None:
    """Where the first key that occurs twice in one JSON object is ([..., key]);
    None when there is none, or when the body is not JSON (pydantic then says so)."""
    try:
        tree = json.loads(raw.decode("utf-8"), object_pairs_hook=_Pairs)
    except (ValueError, RecursionError):
        return None
    # Iterative: a body nested a thousand deep must not overflow this walk's stack.
    stack: list[tuple[Any, list[str | int]]] = [(tree, [])]
    while stack:
        node, loc = stack.pop()
        if isinstance(node, _Pairs):
            seen: set[str] = set()
            for key, value in node:
                if key in seen:
                    return [*loc, key]
                seen.add(key)
                stack.append((value, [*loc, key]))
        elif isinstance(node, list):
            stack.extend((value, [*loc, index]) for index, value in enumerate(node))
    return None


def validation_error(error: ValidationError, what: str) -> BadgelineError:
    problems = error.errors(include_url=False)
    if any(p["type"] == "json_invalid" for p in problems):
        return BadgelineError(ErrorCode.MALFORMED_JSON, f"the {what} is not valid JSON")
    fields = [{"loc": [str(x) if not isinstance(x, int) else x for x in p["loc"]],
               "msg": p["msg"]} for p in problems]  # fmt: skip
    names = ", ".join(".".join(str(x) for x in f["loc"]) or "(body)" for f in fields)
    return BadgelineError(
        ErrorCode.VALIDATION_FAILED, f"the {what} has invalid fields: {names}", fields=fields
    )


async def read_model(request: web.Request, model: type[ModelT]) -> ModelT:
    """The JSON body as `model`: the one place a JSON route reads its body. The limit
    is the app's `client_max_size` (`max_body_bytes`), which aiohttp also enforces on
    a chunked body as it arrives."""
    refuse_declared_oversize(request, request.client_max_size, "a JSON route (max_body_bytes)")
    require_json_media_type(request)
    raw = await request.read()
    if not raw.strip():
        raw = b"{}"
    duplicate = duplicate_key(raw)
    if duplicate is not None:
        name = ".".join(str(part) for part in duplicate)
        raise BadgelineError(
            ErrorCode.VALIDATION_FAILED,
            f"the request body has the key {name!r} twice in one object; send each key once",
            fields=[{"loc": duplicate, "msg": "duplicate key"}],
        )
    try:
        return model.model_validate_json(raw)
    except ValidationError as error:
        raise validation_error(error, "request body") from None


def query_model(request: web.Request, model: type[ModelT]) -> ModelT:
    try:
        return model.model_validate(dict(request.query))
    except ValidationError as error:
        raise validation_error(error, "query string") from None


@web.middleware
async def correlation_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    given = request.headers.get(CORRELATION_HEADER, "")
    request[CORRELATION_ID] = given if _CORRELATION_ID.match(given) else uuid.uuid4().hex
    response = await handler(request)
    response.headers[CORRELATION_HEADER] = request[CORRELATION_ID]
    return response


@web.middleware
async def error_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except BadgelineError as error:
        response = error_response(error)
        if error.code == ErrorCode.BODY_TOO_LARGE:
            # The rest of the body is not wanted: no keep-alive. aiohttp still lingers
            # (reading and dropping, 10 s at most) before it closes, so that the
            # client, still sending, is not reset before it has read this answer.
            response.force_close()
        return response
    except web.HTTPException as http_error:
        if http_error.status < 400:
            raise
        code = _HTTP_CODES.get(http_error.status, ErrorCode.VALIDATION_FAILED)
        message = (
            http_error.reason
            if http_error.status != 413
            else ("the request body is larger than the coordinator accepts (max_body_bytes)")
        )
        # A 405 keeps aiohttp's Allow header: the methods the path does have.
        allow = {"Allow": http_error.headers["Allow"]} if "Allow" in http_error.headers else None
        response = error_response(BadgelineError(code, message), allow)
        if http_error.status == 413:
            response.force_close()  # as above: no keep-alive after a refused body
        return response
    except STORE_UNAVAILABLE as error:
        log_event("store_unavailable", logging.ERROR, error=str(error), path=request.path)
        return error_response(
            BadgelineError(
                ErrorCode.STORE_UNAVAILABLE, "the job store is unreachable; retry", retry_after_s=1
            )
        )
    except Exception:
        logging.getLogger(__name__).exception("unhandled error on %s", request.path)
        return error_response(BadgelineError(ErrorCode.INTERNAL, "internal error; see the log"))
