"""Schemathesis against a live coordinator's `/v1/openapi.json`.

Shared by tests/security/test_schemathesis.py (a short run) and
bench/bench_schemathesis.py (≥ 10,000 cases). Every documented operation is
driven with schema-conforming (positive) and schema-violating (negative) cases,
each sent with a token of a role the operation documents (sometimes a wrong or
missing one) and, half the time, with path ids that exist (printer-a, a real
job), so that cases get past authorization into validation and the handlers.

Every answer is checked: no 5xx other than the documented 503s (a shed job,
no healthy printer), every 4xx/5xx in the one documented error shape with a
known code, and every documented 2xx body valid against its schema.
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from hypothesis.errors import HypothesisException
from schemathesis.core.result import Err
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import (
    response_headers_conformance,
    response_schema_conformance,
)

from badgeline.protocol.errors import ErrorCode
from tests.conftest import KIOSK_TOKEN, METRICS_TOKEN, OPERATOR_TOKEN, agent_token

KNOWN_CODES = {str(code) for code in ErrorCode}
# Badge PDFs (PUT /v1/artifacts/{name}): raw bytes, some with the PDF header.
_PDF_BYTES = st.binary(max_size=2048)
schemathesis.openapi.media_type(
    "application/pdf", st.one_of(_PDF_BYTES, _PDF_BYTES.map(lambda data: b"%PDF-1.4\n" + data))
)
# 503s the API documents: the job was shed, or no printer could take it.
DOCUMENTED_503 = {"queue_full", "no_printer_available"}
ROLE_TOKENS = {
    "kiosk": KIOSK_TOKEN,
    "operator": OPERATOR_TOKEN,
    "agent": agent_token("printer-a"),
    "metrics": METRICS_TOKEN,
}


@dataclass
class FuzzReport:
    cases: int = 0
    by_status: Counter[int] = field(default_factory=Counter)
    by_operation: Counter[str] = field(default_factory=Counter)
    error_codes: Counter[str] = field(default_factory=Counter)
    # Stateful runs: the links followed, and "operation status" pairs (states reached).
    by_link: Counter[str] = field(default_factory=Counter)
    by_answer: Counter[str] = field(default_factory=Counter)
    runs: Counter[str] = field(default_factory=Counter)  # how each state machine run ended
    failures: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> dict[str, Any]:
        return {
            "cases": self.cases, "seconds": round(self.seconds, 1),
            "cases_per_s": round(self.cases / self.seconds, 1) if self.seconds else None,
            "by_status": dict(sorted(self.by_status.items())),
            "error_codes": dict(self.error_codes.most_common()),
            "operations": len(self.by_operation), "failures": len(self.failures),
            "skipped": self.skipped,
            **({"links_followed": dict(self.by_link.most_common())} if self.by_link else {}),
            **({"stateful_runs": dict(self.runs)} if self.runs else {}),
        }  # fmt: skip


class Violation(AssertionError):
    pass


def _error_shape_problem(body: Any) -> str | None:
    if not isinstance(body, dict) or not isinstance(body.get("error"), dict):
        return "no error object"
    error = body["error"]
    if set(error) != {"code", "message", "fields"}:
        return f"error keys {sorted(error)}"
    if error["code"] not in KNOWN_CODES:
        return f"unknown code {error['code']!r}"
    if not isinstance(error["message"], str) or not error["message"]:
        return "empty message"
    fields_ok = isinstance(error["fields"], list) and all(
        isinstance(f, dict) and set(f) == {"loc", "msg"} and isinstance(f["loc"], list)
        for f in error["fields"]
    )
    return None if fields_ok else "malformed fields"


def check_answer(case: Any, response: requests.Response, report: FuzzReport) -> None:
    """Raise `Violation` when the answer breaks the contract; tally it either way."""
    status = response.status_code
    report.by_status[status] += 1
    if status in _documented_statuses(case):
        # The headers the document declares (X-Correlation-ID, Retry-After, …).
        case.validate_response(response, checks=[response_headers_conformance])
    if status < 400:
        if status in _documented_statuses(case) and response.content:
            case.validate_response(response, checks=[response_schema_conformance])
        return
    if _documented_otherwise(case, status):
        # This error is documented in another shape (a sign-in page, /healthz's 503).
        if response.content and "application/json" in _documented_media(case, status):
            case.validate_response(response, checks=[response_schema_conformance])
        return
    try:
        body = response.json()
    except ValueError:
        raise Violation(f"{status} without a JSON body: {response.text[:200]!r}") from None
    problem = _error_shape_problem(body)
    if problem is not None:
        raise Violation(f"{status} not in the error shape ({problem}): {body!r:.300}")
    code = body["error"]["code"]
    report.error_codes[code] += 1
    if status >= 500 and not (status == 503 and code in DOCUMENTED_503):
        raise Violation(f"server error {status}: {body!r:.300}")


def _documented_media(case: Any, status: int) -> dict[str, Any]:
    answer = case.operation.definition.raw.get("responses", {}).get(str(status), {})
    content: dict[str, Any] = answer.get("content", {})
    return content


def _documented_otherwise(case: Any, status: int) -> bool:
    """Whether the operation documents this error status in a shape other than ErrorBody."""
    media = _documented_media(case, status)
    if not media:
        return False
    schema = media.get("application/json", {}).get("schema", {})
    return not str(schema.get("$ref", "")).endswith("/ErrorBody")


def _documented_statuses(case: Any) -> set[int]:
    raw = case.operation.definition.raw.get("responses", {})
    return {int(code) for code in raw if str(code).isdigit()}


def _has_something_to_break(raw: dict[str, Any]) -> bool:
    """Whether negative cases exist: a token to drop, a query, a body schema, or a path
    parameter that is more than a string. Without one, hypothesis spends hundreds of
    tries (half the short run's time) to find no case at all."""
    params = raw.get("parameters", [])
    bodies = raw.get("requestBody", {}).get("content", {}).values()
    return bool(
        raw.get("security")
        or any(p["in"] == "query" or p.get("schema") != {"type": "string"} for p in params)
        or any(media.get("schema") for media in bodies)
    )


def _roles(document: dict[str, Any], path: str, method: str) -> list[str]:
    text = document["paths"][path][method].get("description", "")
    return [r.strip() for r in text.removeprefix("Roles:").split(",")] if text else []


@dataclass
class FuzzTarget:
    base_url: str
    job_ids: list[str]
    examples_per_operation: int
    seed: int = 0
    stop_on_failure: bool = True
    report: FuzzReport = field(default_factory=FuzzReport)


GENERATED = "<whatever schemathesis generated>"


def _callers(roles: list[str]) -> st.SearchStrategy[str | None]:
    """Mostly a token of a documented role; sometimes none, one nobody has, or the
    header schemathesis made up for the bearer scheme."""
    good = [ROLE_TOKENS[r] for r in roles if r in ROLE_TOKENS]
    if not good:
        return st.sampled_from([None, None, None, "nobody-has-this-token", GENERATED])
    return st.sampled_from(good * 20 + [None, "nobody-has-this-token", GENERATED])


def _authorize(case: Any, token: str | None) -> None:
    """Set the case's Authorization header (negative cases drop one passed to call())."""
    if token == GENERATED:
        return
    headers = {k: v for k, v in (case.headers or {}).items() if k.lower() != "authorization"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    case.headers = headers


def _runner(target: FuzzTarget, operation: Any, roles: list[str], mode: GenerationMode,
            session: requests.Session) -> Callable[[], None]:  # fmt: skip
    @settings(max_examples=target.examples_per_operation, database=None, deadline=None,
              phases=[Phase.explicit, Phase.generate] if not target.stop_on_failure
              else [Phase.explicit, Phase.generate, Phase.shrink],
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(case=operation.as_strategy(generation_mode=mode), token=_callers(roles),
           real_ids=st.booleans(), job=st.sampled_from(target.job_ids))  # fmt: skip
    def run(case: Any, token: str | None, real_ids: bool, job: str) -> None:
        if real_ids and case.path_parameters:
            if "printer_id" in case.path_parameters:
                case.path_parameters["printer_id"] = "printer-a"
            if "job_id" in case.path_parameters:
                case.path_parameters["job_id"] = job
        _authorize(case, token)
        response = case.call(base_url=target.base_url, session=session, timeout=30)
        target.report.cases += 1
        target.report.by_operation[operation.label] += 1
        try:
            check_answer(case, response, target.report)
        except AssertionError as violation:  # schemathesis' own failures are AssertionErrors
            target.report.failures.append(f"{operation.label} [{mode}]: {violation}\n"
                                          f"    {case.as_curl_command()}")  # fmt: skip
            if target.stop_on_failure:
                raise

    return seed(target.seed)(run)


def fuzz(target: FuzzTarget) -> FuzzReport:
    with urllib.request.urlopen(target.base_url + "/v1/openapi.json", timeout=10) as answer:
        document = json.loads(answer.read())
    schema = schemathesis.openapi.from_dict(document)
    started = time.monotonic()
    with requests.Session() as session:
        for result in schema.get_all_operations():
            if isinstance(result, Err):
                raise result.err()  # the document itself is broken
            operation = result.ok()
            if operation.definition.raw.get("x-long-lived"):
                target.report.skipped.append(f"{operation.label}: a stream, not fuzzed")
                continue
            roles = _roles(document, operation.path, operation.method.lower())
            modes = [GenerationMode.POSITIVE]
            if _has_something_to_break(operation.definition.raw):
                modes.append(GenerationMode.NEGATIVE)
            else:
                target.report.skipped.append(f"{operation.label} [negative]: nothing to break")
            for mode in modes:
                try:
                    _runner(target, operation, roles, mode, session)()
                except HypothesisException as error:  # e.g. nothing negative to generate
                    target.report.skipped.append(f"{operation.label} [{mode}]: {error!r:.120}")
    target.report.seconds = time.monotonic() - started
    return target.report
