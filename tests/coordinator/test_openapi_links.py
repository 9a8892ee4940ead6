"""The OpenAPI document's links: each names an operation the document has, and
fills only parameters and body fields that operation takes."""

from __future__ import annotations

from typing import Any

from badgeline.coordinator.api.openapi import build_openapi
from badgeline.coordinator.api.openapi_links import LINKS

PREFIX = "#/components/schemas/"


def _resolve(pointer: str, document: dict[str, Any]) -> Any:
    node: Any = document
    for part in pointer.removeprefix("#/").split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def _body_fields(operation: dict[str, Any], document: dict[str, Any]) -> set[str]:
    schema = operation["requestBody"]["content"]["application/json"]["schema"]
    return set(document["components"]["schemas"][schema["$ref"].removeprefix(PREFIX)]["properties"])


def _links(document: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (f"{method.upper()} {path} {status} {name}", link)
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
        for status, answer in operation["responses"].items()
        for name, link in answer.get("links", {}).items()
    ]


def test_every_link_targets_a_documented_operation_with_the_parameters_it_fills() -> None:
    # GIVEN the document with every route
    document = build_openapi()
    links = _links(document)
    # THEN every link in the table made it into the document
    assert len(links) == sum(len(named) for answers in LINKS.values() for named in answers.values())
    for label, link in links:
        # AND each names an operation of the document
        target = _resolve(link["operationRef"], document)
        assert "responses" in target, label
        # AND fills only the parameters that operation has
        names = {param["name"] for param in target.get("parameters", [])}
        assert set(link.get("parameters", {})) <= names, label
        # AND its body (a whole earlier body, or fields of the target's body model)
        body = link.get("requestBody")
        if isinstance(body, dict):
            assert set(body) <= _body_fields(target, document), label
        elif body is not None:
            assert body == "$request.body" and "requestBody" in target, label


def test_submit_links_carry_the_job_id_to_read_cancel_and_reprint() -> None:
    document = build_openapi()
    accepted = document["paths"]["/v1/jobs"]["post"]["responses"]["201"]["links"]
    for name in ("GetJob", "CancelJob", "ReprintJob"):
        assert accepted[name]["parameters"] == {"job_id": "$response.body#/job_id"}
    lease = document["paths"]["/v1/agents/{printer_id}/lease"]["post"]["responses"]["200"]
    start = lease["links"]["StartLeasedJob"]
    assert start["requestBody"] == {"lease_id": "$response.body#/jobs/0/lease_id"}
