"""HTTP plumbing shared by every route: errors, bodies, correlation ids.

One middleware turns every failure into the documented error body, so no
handler (and no bad request) can produce a 500 with an HTML page.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import redis.exceptions
from aiohttp import web
from pydantic import BaseModel, ValidationError

from badgeline.coordinator.events import log_event
from badgeline.protocol.errors import BadgelineError, ErrorCode
from badgeline.protocol.ids import is_job_id

ModelT = TypeVar("ModelT", bound=BaseModel)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

CORRELATION_HEADER = "X-Correlation-ID"
# A 401 names the scheme to authenticate with (RFC 9110 §15.5.2, RFC 6750 §3).
AUTH_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="badgeline"'}
CORRELATION_ID = web.RequestKey("correlation_id", str)
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
    return web.Response(
        text=text, status=status, content_type="application/json", headers=headers
    )


def error_response(error: BadgelineError, headers: dict[str, str] | None = None) -> web.Response:
    headers = dict(headers or {})
    if error.retry_after_s is not None:
        headers["Retry-After"] = str(error.retry_after_s)
    if error.code == ErrorCode.UNAUTHORIZED:
        headers = AUTH_CHALLENGE | headers
    return json_response(error.body(), status=error.http_status, headers=headers)


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
    raw = await request.read()
    if not raw.strip():
        raw = b"{}"
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
        return error_response(error)
    except web.HTTPException as http_error:
        if http_error.status < 400:
            raise
        code = _HTTP_CODES.get(http_error.status, ErrorCode.VALIDATION_FAILED)
        message = http_error.reason if http_error.status != 413 else (
            "the request body is larger than the coordinator accepts (max_body_bytes)"
        )
        # A 405 keeps aiohttp's Allow header: the methods the path does have.
        allow = {"Allow": http_error.headers["Allow"]} if "Allow" in http_error.headers else None
        return error_response(BadgelineError(code, message), allow)
    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as error:
        log_event("store_unavailable", logging.ERROR, error=str(error), path=request.path)
        return error_response(
            BadgelineError(
                ErrorCode.STORE_UNAVAILABLE, "the job store is unreachable; retry", retry_after_s=1
            )
        )
    except Exception:
        logging.getLogger(__name__).exception("unhandled error on %s", request.path)
        return error_response(BadgelineError(ErrorCode.INTERNAL, "internal error; see the log"))
