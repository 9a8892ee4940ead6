"""/healthz and the OpenAPI document generated from the wire models."""

from __future__ import annotations

import json
from typing import Any

from aiohttp.test_utils import TestClient

from badgeline.coordinator import api_agent, api_kiosk, api_ops
from tests.coordinator import flows

Client = TestClient[Any, Any]
CORE_PATHS = {
    "/v1/jobs": {"post", "get"},
    "/v1/jobs/{job_id}": {"get"},
    "/v1/jobs/{job_id}/cancel": {"post"},
    "/v1/agents/{printer_id}/heartbeat": {"post"},
    "/v1/agents/{printer_id}/lease": {"post"},
    "/v1/agents/{printer_id}/jobs/{job_id}/start": {"post"},
    "/v1/agents/{printer_id}/jobs/{job_id}/ack": {"post"},
    "/v1/dead-letters": {"get"},
    "/v1/dead-letters/redrive": {"post"},
    "/v1/queues/{printer_id}": {"get"},
    "/healthz": {"get"},
}


async def test_healthz_needs_no_token_and_reports_redis(client: Client) -> None:
    response = await client.get("/healthz")
    body = await flows.expect(response, 200)
    assert body["ok"] is True
    assert response.headers["X-Correlation-ID"]


async def _openapi(client: Client) -> dict[str, Any]:
    response = await client.get("/v1/openapi.json")
    assert response.status == 200 and response.content_type == "application/json"
    document: dict[str, Any] = json.loads(await response.text())
    return document


async def test_openapi_lists_every_core_path_and_method(client: Client) -> None:
    document = await _openapi(client)
    assert document["openapi"].startswith("3.")
    for path, methods in CORE_PATHS.items():
        assert path in document["paths"], path
        assert methods <= set(document["paths"][path]), (path, document["paths"][path].keys())
    # AND every route the core modules register is documented
    for table in (api_kiosk.routes, api_agent.routes, api_ops.routes):
        for route in table:
            route_path = getattr(route, "path", None)
            assert route_path in document["paths"], route_path


async def test_openapi_documents_every_registered_route(client: Client) -> None:
    # GIVEN every route the app answers (HEAD aside: aiohttp adds one to each GET)
    app = client.server.app
    assert app is not None
    registered = {
        (route.method.lower(), route.resource.canonical)
        for route in app.router.routes()
        if route.resource is not None and route.method != "HEAD"
    }
    # WHEN the document is read
    document = await _openapi(client)
    listed = {(method, path) for path, ops in document["paths"].items() for method in ops}
    # THEN it lists exactly those routes, each with its own entry (summary, answers)
    assert listed == registered
    undocumented = sorted(
        f"{method.upper()} {path}"
        for path, ops in document["paths"].items()
        for method, op in ops.items()
        if op.get("x-undocumented")
    )
    assert undocumented == [], "add them to badgeline/coordinator/openapi_operations.py"
    # AND an operator route carries its query model and the error answers
    stats = document["paths"]["/v1/stats"]["get"]
    assert [param["name"] for param in stats["parameters"]] == ["by"]
    assert {"200", "401", "403", "422"} <= set(stats["responses"])


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return found + [ref for value in node.values() for ref in _refs(value)]
    if isinstance(node, list):
        return [ref for value in node for ref in _refs(value)]
    return []


async def test_openapi_components_resolve_and_describe_the_contract(client: Client) -> None:
    document = await _openapi(client)
    schemas = document["components"]["schemas"]
    assert document["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    # every $ref points at a schema that exists
    refs = _refs(document)
    assert refs
    prefix = "#/components/schemas/"
    assert all(ref.startswith(prefix) and ref.removeprefix(prefix) in schemas for ref in refs)
    # the submit body is the strict PrintJob, with its bounds
    submit = document["paths"]["/v1/jobs"]["post"]
    ref = submit["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    job = schemas[ref.removeprefix(prefix)]
    assert set(job["required"]) == {"attendee_id", "badge_pdf_ref", "printer_target",
                                    "idempotency_key"}  # fmt: skip
    assert job["additionalProperties"] is False
    assert job["properties"]["priority"]["minimum"] == 0
    assert job["properties"]["priority"]["maximum"] == 1000
    assert {"201", "200", "409", "422", "503"} <= set(submit["responses"])
