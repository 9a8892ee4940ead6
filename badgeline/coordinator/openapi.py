"""The OpenAPI document, generated from the pydantic models the routes use."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode, models_json_schema

from badgeline import __version__
from badgeline.coordinator import enrolment
from badgeline.protocol import models as m


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    summary: str
    roles: tuple[str, ...]
    request: type[BaseModel] | None
    responses: dict[int, type[BaseModel] | None]
    query: tuple[tuple[str, str, str], ...] = ()  # (name, type, description)


OPERATIONS: tuple[Operation, ...] = (
    Operation("post", "/v1/jobs", "Submit a badge print job", ("kiosk", "operator"), m.PrintJob,
              {201: m.SubmitAccepted, 200: m.SubmitAccepted, 409: m.ErrorBody, 422: m.ErrorBody,
               503: m.ErrorBody}),
    Operation("get", "/v1/jobs/{job_id}", "A job with its history", ("kiosk", "operator"), None,
              {200: m.JobView, 404: m.ErrorBody}),
    Operation("get", "/v1/jobs", "An attendee's jobs", ("kiosk", "operator"), None,
              {200: m.JobList, 422: m.ErrorBody},
              query=(("attendee_id", "string", "the attendee"),)),
    Operation("post", "/v1/jobs/{job_id}/cancel", "Cancel a job before it prints",
              ("kiosk", "operator"), None, {200: m.CancelResult, 409: m.ErrorBody}),
    Operation("post", "/v1/agents/{printer_id}/heartbeat", "Report printer health",
              ("agent",), m.HeartbeatRequest, {200: m.HeartbeatResponse}),
    Operation("post", "/v1/agents/{printer_id}/lease", "Long-poll for jobs", ("agent",), None,
              {200: m.LeaseResponse},
              query=(("wait", "number", "seconds to wait for work"),
                     ("max", "integer", "most jobs to lease"))),
    Operation("post", "/v1/agents/{printer_id}/jobs/{job_id}/start", "Ask for the start grant",
              ("agent",), m.StartRequest, {200: m.StartResponse, 409: m.ErrorBody}),
    Operation("post", "/v1/agents/{printer_id}/jobs/{job_id}/ack", "Report a print result",
              ("agent",), m.AckRequest, {200: m.AckResponse}),
    Operation("get", "/v1/dead-letters", "Shed and failed jobs", ("operator",), None,
              {200: m.DeadLetterList}),
    Operation("post", "/v1/dead-letters/redrive", "Redrive through the dedupe gate",
              ("operator",), m.RedriveRequest, {200: m.RedriveResponse}),
    Operation("get", "/v1/queues/{printer_id}", "Peek a printer queue in print order",
              ("operator",), None, {200: None}, query=(("limit", "integer", "rows"),)),
    Operation("get", "/healthz", "Liveness and Redis reachability", (), None, {200: None}),
    Operation("post", "/v1/enrolment-codes", "Create a single-use enrolment code for a printer",
              ("operator",), enrolment.EnrolmentCodeRequest,
              {201: enrolment.EnrolmentCodeIssued, 422: m.ErrorBody}),
    Operation("post", "/v1/enrol", "Exchange an enrolment code for an agent token (no token)",
              (), enrolment.EnrolRequest,
              {201: enrolment.EnrolResult, 403: m.ErrorBody, 410: m.ErrorBody, 422: m.ErrorBody}),
)  # fmt: skip


def _operation_document(op: Operation, refs: dict[Any, Any]) -> dict[str, Any]:
    doc: dict[str, Any] = {"summary": op.summary, "responses": {}}
    if op.roles:
        doc["description"] = "Roles: " + ", ".join(op.roles)
        doc["security"] = [{"bearer": []}]
    params = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in ("printer_id", "job_id")
        if "{" + name + "}" in op.path
    ]
    params += [
        {"name": name, "in": "query", "required": name == "attendee_id",
         "schema": {"type": kind}, "description": text}
        for name, kind, text in op.query
    ]  # fmt: skip
    if params:
        doc["parameters"] = params
    if op.request is not None:
        schema = refs[(op.request, "validation")]
        doc["requestBody"] = {"required": True, "content": {"application/json": {"schema": schema}}}
    for status, model in op.responses.items():
        content = {"application/json": {"schema": refs[(model, "serialization")]}} if model else {}
        doc["responses"][str(status)] = {"description": str(status), "content": content}
    return doc


def build_openapi() -> dict[str, Any]:
    models = {model for op in OPERATIONS for model in [op.request, *op.responses.values()] if model}
    keys: list[tuple[type[BaseModel], JsonSchemaMode]] = [
        (model, mode) for model in models for mode in ("validation", "serialization")
    ]
    refs, schema = models_json_schema(keys, ref_template="#/components/schemas/{model}")
    paths: dict[str, dict[str, Any]] = {}
    for op in OPERATIONS:
        paths.setdefault(op.path, {})[op.method] = _operation_document(op, refs)
    return {
        "openapi": "3.1.0",
        "info": {"title": "badgeline coordinator", "version": __version__},
        "paths": paths,
        "components": {
            "schemas": schema.get("$defs", {}),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }
