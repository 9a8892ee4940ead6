"""/healthz and the OpenAPI document generated from the wire models."""

from __future__ import annotations

import json
from typing import Any

import jsonschema_rs
from aiohttp.test_utils import TestClient

from badgeline.coordinator.api import agent as api_agent
from badgeline.coordinator.api import kiosk as api_kiosk
from badgeline.coordinator.api import ops as api_ops
from tests.coordinator import flows
from tests.coordinator.conftest import MakeClient
from tests.helpers import job_body

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
    assert undocumented == [], "add them to badgeline/coordinator/api/openapi_operations.py"
    # AND an operator route carries its query model (with the paging parameters) and
    # the error answers
    stats = document["paths"]["/v1/stats"]["get"]
    assert [param["name"] for param in stats["parameters"]] == ["limit", "after", "by"]
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


def _answer_schema(document: dict[str, Any], path: str, method: str, status: int) -> Any:
    responses = document["paths"][path][method]["responses"]
    assert str(status) in responses, f"{method.upper()} {path} does not document {status}"
    schema = responses[str(status)]["content"]["application/json"]["schema"]
    return jsonschema_rs.validator_for({**schema, "components": document["components"]})


async def test_the_error_answers_the_server_gives_are_the_documented_ones(client: Client) -> None:
    # GIVEN the document, and a job that was accepted and then canceled
    document = await _openapi(client)
    body = job_body()
    job = await flows.expect(await client.post("/v1/jobs", json=body, headers=flows.KIOSK), 201)
    await flows.expect(await client.post(f"/v1/jobs/{job['job_id']}/cancel",
                                         headers=flows.KIOSK), 200)  # fmt: skip
    # WHEN the server refuses calls with errors whose bodies add fields
    refusals = [
        # the key names another payload: 409 with the job id
        ("post", "/v1/jobs", "/v1/jobs", {**body, "priority": 7}, flows.KIOSK, 409),
        # no printer in this pool: 503 naming the pool
        ("post", "/v1/jobs", "/v1/jobs", job_body("pool:nobody"), flows.KIOSK, 503),
        ("post", "/v1/jobs/{job_id}/reprint", f"/v1/jobs/{job['job_id']}/reprint",
         {"reason": "lost", "printer_target": "pool:nobody"}, flows.OPERATOR, 503),
    ]  # fmt: skip
    for method, template, path, payload, headers, status in refusals:
        response = await client.request(method, path, json=payload, headers=headers)
        answer = await flows.expect(response, status)
        # THEN the document lists that status for the operation, and the body fits its schema
        errors = list(_answer_schema(document, template, method, status).iter_errors(answer))
        assert not errors, (template, status, [error.message for error in errors])
    # AND 429 is documented only where a limit applies: kiosk routes, the lease long-poll
    # and the two routes where secrets are guessed
    limited = {(method, path) for path, ops in document["paths"].items()
               for method, op in ops.items() if "429" in op["responses"]}  # fmt: skip
    assert {("post", "/v1/jobs"), ("post", "/v1/agents/{printer_id}/lease"),
            ("post", "/v1/enrol"), ("post", "/dashboard/login")} <= limited  # fmt: skip
    assert not limited & {("get", "/v1/printers"), ("post", "/v1/agents/{printer_id}/heartbeat"),
                          ("post", "/v1/enrolment-codes"), ("get", "/metrics")}  # fmt: skip
    login_429 = document["paths"]["/dashboard/login"]["post"]["responses"]["429"]
    assert login_429["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorBody")


async def test_a_request_body_is_required_exactly_where_the_server_needs_one(
    client: Client,
) -> None:
    document = await _openapi(client)
    # GIVEN calls whose body has only optional fields, sent with no body at all
    for path, template in [
        ("/v1/printers/printer-a/pause", "/v1/printers/{printer_id}/pause"),
        ("/v1/printers/printer-a/drain", "/v1/printers/{printer_id}/drain"),
        ("/v1/dead-letters/redrive", "/v1/dead-letters/redrive"),
    ]:
        response = await client.post(path, headers=flows.OPERATOR)
        # THEN the server takes them, and the document does not require a body
        assert response.status == 200, (path, await response.text())
        assert document["paths"][template]["post"]["requestBody"]["required"] is False, template
    # AND a submit without a body is refused, and documented as needing one
    response = await client.post("/v1/jobs", headers=flows.KIOSK)
    flows.assert_error_shape(await flows.expect(response, 422), "validation_failed")
    assert document["paths"]["/v1/jobs"]["post"]["requestBody"]["required"] is True
    # AND only a JSON body can be malformed (400), only a body too large (413) or too
    # slow (408: tests/security/test_slow_clients.py)
    assert {"400", "408", "413", "422"} <= set(document["paths"]["/v1/jobs"]["post"]["responses"])
    stats = set(document["paths"]["/v1/stats"]["get"]["responses"])
    assert "422" in stats and not stats & {"400", "408", "413"}
    upload = set(document["paths"]["/v1/artifacts/{name}"]["put"]["responses"])
    assert {"408", "413", "415", "422"} <= upload and "400" not in upload


async def test_the_answers_carry_the_headers_the_document_declares(
    make_client: MakeClient,
) -> None:
    client = await make_client(high_water_mark=1)
    document = await _openapi(client)
    body = job_body()
    # GIVEN answers of each kind: accepted, repeated, unauthenticated, unknown, shed, no printer
    cases = [
        ("post", "/v1/jobs", "/v1/jobs", body, flows.KIOSK, 201),
        ("post", "/v1/jobs", "/v1/jobs", body, flows.KIOSK, 200),
        ("post", "/v1/jobs", "/v1/jobs", job_body(), {}, 401),
        ("get", "/v1/jobs/{job_id}", "/v1/jobs/job_0123456789abcdef", None, flows.KIOSK, 404),
        ("post", "/v1/jobs", "/v1/jobs", job_body(), flows.KIOSK, 503),
        ("post", "/v1/jobs", "/v1/jobs", job_body("pool:nobody"), flows.KIOSK, 503),
    ]  # fmt: skip
    for method, template, path, payload, headers, status in cases:
        response = await client.request(method, path, json=payload, headers=headers)
        assert response.status == status, (path, status, await response.text())
        # THEN each carries every header its status declares as required, in its type
        declared = document["paths"][template][method]["responses"][str(status)]["headers"]
        required = {name for name, header in declared.items() if header["required"]}
        assert required <= set(response.headers), (path, status, dict(response.headers))
        for name, header in declared.items():
            if name in response.headers and header["schema"]["type"] == "integer":
                assert response.headers[name].isdigit(), (path, status, name)
    # AND every answer of every documented operation declares the correlation id
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            for status, answer in operation["responses"].items():
                if not operation.get("x-undocumented"):
                    assert "X-Correlation-ID" in answer["headers"], (method, path, status)
