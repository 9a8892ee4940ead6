"""The OpenAPI document as client generators read it: every operation named
(`operationId`) and tagged, PDF bodies as binary, examples that fit their schemas,
and every list's paging parameters. A client generated from it prints a badge in
tests/e2e/test_generated_client.py."""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

import jsonschema_rs
from aiohttp.test_utils import TestClient

from badgeline.coordinator.api.paging import DEFAULT_LIMIT, MAX_LIMIT

Client = TestClient[Any, Any]
SNAKE_CASE_VERB_FIRST = re.compile(r"^[a-z]+(_[a-z0-9]+)*$")
BINARY = {"type": "string", "format": "binary"}


async def _document(client: Client) -> dict[str, Any]:
    response = await client.get("/v1/openapi.json")
    assert response.status == 200
    document: dict[str, Any] = json.loads(await response.text())
    return document


def _operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(method, path, operation) for path, operations in document["paths"].items()
            for method, operation in operations.items()]  # fmt: skip


async def test_every_operation_has_its_own_operation_id_and_a_declared_tag(client: Client) -> None:
    document = await _document(client)
    operations = _operations(document)
    # THEN every operation has a snake_case operationId, none shared
    names = [operation.get("operationId") for _, _, operation in operations]
    assert all(isinstance(name, str) and SNAKE_CASE_VERB_FIRST.match(name) for name in names), [
        (method, path) for (method, path, _), name in zip(operations, names, strict=True)
        if not isinstance(name, str) or not SNAKE_CASE_VERB_FIRST.match(name)
    ]  # fmt: skip
    assert [name for name, seen in Counter(names).items() if seen > 1] == []
    # AND at least one tag, each declared (with a description) at the top of the document
    declared = {tag["name"] for tag in document["tags"] if tag.get("description")}
    untagged = [(method, path) for method, path, operation in operations
                if not operation.get("tags") or not set(operation["tags"]) <= declared]  # fmt: skip
    assert untagged == []
    # AND the names a kiosk integrator looks for are there, under `kiosk`
    by_id = {operation["operationId"]: operation for _, _, operation in operations}
    for name in ("submit_job", "upload_artifact", "get_job", "download_artifact", "cancel_job"):
        assert by_id[name]["tags"] == ["kiosk"], name


async def test_the_pdf_bodies_are_binary(client: Client) -> None:
    document = await _document(client)
    artifact = document["paths"]["/v1/artifacts/{name}"]
    # THEN the upload's body and the download's answer are PDF bytes
    assert artifact["put"]["requestBody"]["content"] == {"application/pdf": {"schema": BINARY}}
    assert artifact["put"]["requestBody"]["required"] is True
    assert artifact["get"]["responses"]["200"]["content"] == {"application/pdf": {"schema": BINARY}}
    # AND the upload's answer is a model (its `ref` feeds the submission)
    stored = artifact["put"]["responses"]["201"]["content"]["application/json"]["schema"]
    assert stored["$ref"].endswith("/ArtifactStored")


async def test_the_examples_fit_their_schemas(client: Client) -> None:
    document = await _document(client)
    examples: dict[str, Any] = {}
    for method, path, operation in _operations(document):
        bodies = [("request", operation.get("requestBody", {}).get("content", {}))]
        bodies += [(status, answer.get("content", {}))
                   for status, answer in operation["responses"].items()]  # fmt: skip
        for where, content in bodies:
            media = content.get("application/json", {})
            if "example" not in media:
                continue
            schema = {**media["schema"], "components": document["components"]}
            problems = [e.message for e in jsonschema_rs.validator_for(schema).iter_errors(
                media["example"])]  # fmt: skip
            assert problems == [], (method, path, where, problems)
            examples[f"{operation['operationId']} {where}"] = media["example"]
    # THEN the main bodies have one: a kiosk's submission and upload, an agent's calls
    assert {
        "submit_job request",
        "submit_job 201",
        "get_job 200",
        "upload_artifact 201",
        "list_attendee_jobs 200",
        "send_heartbeat request",
        "lease_jobs 200",
        "start_job request",
        "ack_job request",
        "list_dead_letters 200",
    } <= set(examples)
    assert examples["submit_job request"]["badge_pdf_ref"] == examples["upload_artifact 201"]["ref"]


async def test_every_list_documents_its_paging(client: Client) -> None:
    document = await _document(client)
    schemas = document["components"]["schemas"]
    lists = []
    for _, path, operation in _operations(document):
        answer = operation["responses"].get("200", {}).get("content", {}).get("application/json")
        ref = (answer or {}).get("schema", {}).get("$ref", "")
        schema = schemas.get(ref.rpartition("/")[2], {})
        if {"items", "next"} <= set(schema.get("properties", {})):
            lists.append(path)
            # THEN a list answers items and next (null on the last page) ...
            assert {"items", "next"} <= set(schema["required"]), path
            # ... and takes `limit` (bounded, its default said) and `after` (a string)
            params = {p["name"]: p for p in operation["parameters"] if p["in"] == "query"}
            assert params["limit"]["schema"]["maximum"] == MAX_LIMIT, path
            assert params["limit"]["schema"]["default"] in (DEFAULT_LIMIT, 20), path
            assert params["after"]["schema"]["type"] == "string", path
            assert params["after"]["required"] is False, path
    assert sorted(lists) == sorted([
        "/v1/jobs", "/v1/dead-letters", "/v1/failovers", "/v1/printers", "/v1/queues",
        "/v1/queues/{printer_id}", "/v1/alerts", "/v1/alerts/events", "/v1/reconcile",
        "/v1/stats",
    ])  # fmt: skip
