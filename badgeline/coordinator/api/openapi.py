"""The OpenAPI document, generated from the routes the app registers and the models they use.

`build_openapi` takes the app's (method, path) pairs, so the document lists
every route there is; what it says about each comes from
`openapi_operations.OPERATIONS`. A route without an entry is still listed,
marked `x-undocumented`; tests/coordinator/test_openapi.py fails on it, and on
any registered route the served document leaves out.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from aiohttp import web
from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode, models_json_schema

from badgeline import __version__
from badgeline.coordinator.api.attempts import GUESSED_ROUTES
from badgeline.coordinator.api.openapi_examples import example_of
from badgeline.coordinator.api.openapi_links import links_for
from badgeline.coordinator.api.openapi_operations import (
    BY_KEY,
    FORM,
    JSON_OBJECT,
    PDF,
    TAGS,
    Body,
    Operation,
)
from badgeline.coordinator.api.ratelimit import KIOSK_ROUTES, LEASE_ROUTE
from badgeline.protocol import models as m
from badgeline.protocol.events import JobEvent

_PATH_PARAM = re.compile(r"\{(\w+)\}")
_PARAM_SCHEMAS = {
    "printer_id": {"type": "string"},
    "job_id": {"type": "string"},
    "name": {"type": "string"},
}
_ERROR = m.ErrorBody
# A PDF, in and out, is bytes: generators make it a file argument and a bytes answer.
_BINARY = {"type": "string", "format": "binary"}
_SIGN_IN_FORM = {
    "type": "object",
    "required": ["token"],
    "properties": {"token": {"type": "string", "description": "an operator token"}},
}
# The routes a limit applies to (ratelimit.py; attempts.py, where secrets are guessed):
# agents and operators are not rate limited.
RATE_LIMITED_ROUTES = KIOSK_ROUTES | {LEASE_ROUTE} | set(GUESSED_ROUTES)
# The only routes answered without Redis; every other one may be 503 store_unavailable.
STORELESS_ROUTES = {("get", "/v1/openapi.json"), ("get", "/dashboard/static/{name}")}

# Response headers a client may act on (http.py sets them): the correlation id on
# every answer, the auth scheme on a 401, when to come back on a 429 or a 503.
_CORRELATION_HEADER = {
    "description": "the request's X-Correlation-ID if it sent a valid one, else a new id; "
                   "every log line about the request carries it",
    "required": True, "schema": {"type": "string"},
}  # fmt: skip
_STATUS_HEADERS: dict[int, dict[str, Any]] = {
    401: {"WWW-Authenticate": {"description": "the scheme to authenticate with (Bearer)",
                               "required": True, "schema": {"type": "string"}}},
    429: {"Retry-After": {"description": "seconds to wait before retrying", "required": True,
                          "schema": {"type": "integer"}}},
    503: {"Retry-After": {"description": "seconds to wait before retrying (queue_full, "
                                         "store_unavailable; absent on no_printer_available)",
                          "required": False, "schema": {"type": "integer"}}},
}  # fmt: skip


def registered_routes(app: web.Application) -> tuple[tuple[str, str], ...]:
    """Every (method, path) the app answers, HEAD aside (aiohttp adds it to each GET)."""
    pairs = set()
    for route in app.router.routes():
        path = route.resource.canonical if route.resource is not None else None
        if path and route.method not in ("HEAD", "*"):
            pairs.add((route.method.lower(), path))
    return tuple(sorted(pairs, key=lambda pair: (pair[1], pair[0])))


@functools.lru_cache(maxsize=4)
def build_openapi(routes: tuple[tuple[str, str], ...] | None = None) -> dict[str, Any]:
    """The document for these routes (`registered_routes(app)`); None: every documented one."""
    if routes is None:
        routes = tuple(sorted(BY_KEY, key=lambda pair: (pair[1], pair[0])))
    operations = [BY_KEY.get(route) for route in routes]
    known = [op for op in operations if op is not None]
    refs, schema = _schemas(known)
    paths: dict[str, dict[str, Any]] = {}
    for (method, path), op in zip(routes, operations, strict=True):
        doc = _operation_document(op, refs, set(routes)) if op is not None else _undocumented(path)
        paths.setdefault(path, {})[method] = doc
    return {
        "openapi": "3.1.0",
        "info": {"title": "badgeline coordinator", "version": __version__},
        "tags": [{"name": name, "description": text} for name, text in TAGS.items()],
        "paths": paths,
        "components": {
            "schemas": schema.get("$defs", {}),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }


def _schemas(operations: list[Operation]) -> tuple[dict[Any, Any], dict[str, Any]]:
    # A model as a client sends it (validation) where it is a request body, as the
    # coordinator answers it (serialization) where it is a response: only a model that is
    # both, and differs between the two, gets two schemas (pydantic's -Input/-Output).
    requests: set[type[BaseModel]] = set()
    # JobEvent is no body: it is each `data:` of the event stream and each webhook's
    # body, named here so a generated client has the model to read them with.
    responses: set[type[BaseModel]] = {_ERROR, JobEvent}
    for op in operations:
        if isinstance(op.request, type):
            requests.add(op.request)
        responses |= {body for body in op.responses.values() if isinstance(body, type)}
    keys: list[tuple[type[BaseModel], JsonSchemaMode]] = [
        *((model, "validation") for model in requests),
        *((model, "serialization") for model in responses),
    ]
    return models_json_schema(keys, ref_template="#/components/schemas/{model}")


def _operation_document(
    op: Operation, refs: dict[Any, Any], routes: set[tuple[str, str]]
) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "operationId": op.operation_id, "tags": [op.tag], "summary": op.summary, "responses": {},
    }  # fmt: skip
    if op.roles:
        doc["description"] = "Roles: " + ", ".join(op.roles)
        doc["security"] = [{"bearer": []}]
    if op.long_lived:
        doc["x-long-lived"] = True
    params = _parameters(op)
    if params:
        doc["parameters"] = params
    if op.request is not None:
        doc["requestBody"] = {
            "required": _body_required(op.request),
            "content": _content(op.request, refs, "validation"),
        }
    for status, body in _responses(op, params).items():
        content = _content(body, refs, "serialization") if body is not None else {}
        headers = {"X-Correlation-ID": _CORRELATION_HEADER, **_STATUS_HEADERS.get(status, {})}
        doc["responses"][str(status)] = {
            "description": str(status), "headers": headers, "content": content,
        }  # fmt: skip
        links = links_for(op.method, op.path, status, routes)
        if links:
            doc["responses"][str(status)]["links"] = links
    return doc


def _body_required(body: Body) -> bool:
    """An empty JSON body reads as `{}` (http.read_model): one is needed only when
    the model has a required field."""
    if isinstance(body, type):
        return bool(body.model_json_schema().get("required"))
    return True


def _parameters(op: Operation) -> list[dict[str, Any]]:
    params: list[dict[str, Any]] = [
        {"name": name, "in": "path", "required": True,
         "schema": _PARAM_SCHEMAS.get(name, {"type": "string"})}
        for name in _PATH_PARAM.findall(op.path)
    ]  # fmt: skip
    if op.query_model is not None:
        schema = op.query_model.model_json_schema()
        required = set(schema.get("required", []))
        for name, field_schema in schema["properties"].items():
            param = {"name": name, "in": "query", "required": name in required,
                     "schema": _not_null(field_schema)}  # fmt: skip
            if "description" in field_schema:
                param["description"] = field_schema["description"]
            params.append(param)
    return params


def _not_null(field_schema: dict[str, Any]) -> dict[str, Any]:
    """An optional query parameter is absent, never null (a query string has no null):
    `str | None` is documented as a string."""
    options = [o for o in field_schema.get("anyOf", []) if o.get("type") != "null"]
    if len(options) != 1:
        return field_schema
    rest = {k: v for k, v in field_schema.items()
            if k != "anyOf" and not (k == "default" and v is None)}  # fmt: skip
    return {**rest, **options[0]}


def _responses(op: Operation, params: list[dict[str, Any]]) -> dict[int, Body]:
    """The operation's own answers, and the error answers every such operation can give."""
    errors: dict[int, Body] = {}
    if op.roles:
        errors |= {401: _ERROR, 403: _ERROR}
    if (op.method.upper(), op.path) in RATE_LIMITED_ROUTES:
        errors[429] = _ERROR
    if any(param["in"] == "path" for param in params):
        errors[404] = _ERROR
    json_body = isinstance(op.request, type)  # a model: the body is JSON
    if json_body:
        errors[400] = _ERROR  # malformed_json
        errors[415] = _ERROR  # unsupported_media_type: a body not sent as application/json
    if op.request is not None:
        # request_timeout; body_too_large (refused on its Content-Length, before reading)
        errors |= {408: _ERROR, 413: _ERROR}
    if json_body or any(param["in"] == "query" for param in params):
        errors[422] = _ERROR  # validation_failed
    if op.key not in STORELESS_ROUTES:
        errors[503] = _ERROR
    return errors | op.responses


def _content(body: Body, refs: dict[Any, Any], mode: JsonSchemaMode) -> dict[str, Any]:
    if body == JSON_OBJECT:
        return {"application/json": {"schema": {"type": "object"}}}
    if body == PDF:
        return {PDF: {"schema": dict(_BINARY)}}
    if body == FORM:  # the dashboard's sign-in, its one form
        return {FORM: {"schema": _SIGN_IN_FORM}}
    if body is None or isinstance(body, str):
        return {body: {}} if body else {}
    media: dict[str, Any] = {"schema": refs[(body, mode)]}
    example = example_of(body)
    if example is not None:
        media["example"] = example
    return {"application/json": media}


def _undocumented(path: str) -> dict[str, Any]:
    return {
        "summary": f"{path} (undocumented)",
        "x-undocumented": True,
        "responses": {"default": {"description": "not documented"}},
    }
