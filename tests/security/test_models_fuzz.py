"""Property tests of the inbound wire models (hypothesis).

- Whatever bytes or JSON arrive, validation either accepts or raises
  `ValidationError`: never another exception (which would be a 500).
- Whatever is accepted satisfies every documented constraint: no invalid string
  gets in, even after the models' whitespace stripping.
- Whatever is accepted round-trips through its own JSON unchanged.
- Every value built from the documented patterns is accepted.
"""

from __future__ import annotations

import json
import re
from typing import Any, TypeVar
from urllib.parse import urlsplit

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from badgeline.coordinator.api.enrolment import (
    AGENT_ID_PATTERN,
    CODE_PATTERN,
    EnrolmentCodeRequest,
    EnrolRequest,
)
from badgeline.protocol.ids import (
    ATTENDEE_ID_PATTERN,
    IDEMPOTENCY_KEY_PATTERN,
    JOB_ID_PATTERN,
    PRINTER_ID_PATTERN,
    PRINTER_TARGET_PATTERN,
)
from badgeline.protocol.models import (
    PDF_REF_SCHEMES,
    AckRequest,
    HeartbeatRequest,
    PrintJob,
    RedriveRequest,
    StartRequest,
)

ModelT = TypeVar("ModelT", bound=BaseModel)
INBOUND: list[type[BaseModel]] = [
    PrintJob, HeartbeatRequest, StartRequest, AckRequest, RedriveRequest, EnrolRequest,
    EnrolmentCodeRequest,
]  # fmt: skip

json_scalars = (
    st.none() | st.booleans() | st.integers() | st.integers(min_value=2**63) | st.floats()
    | st.text() | st.sampled_from(["", " ", "printer-a", "artifact://x.pdf", "\x00", "\U0001d518"])
)  # fmt: skip
json_values = st.recursive(
    json_scalars, lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12,
)  # fmt: skip


def _field_names(model: type[BaseModel]) -> list[str]:
    return list(model.model_fields)


def _shaped_like(model: type[BaseModel]) -> st.SearchStrategy[dict[str, Any]]:
    """Objects with (some of) the model's own field names and any JSON values."""
    names = _field_names(model)
    return st.fixed_dictionaries(
        {}, optional={name: json_values for name in names}
    ) | st.dictionaries(st.sampled_from([*names, "extra"]), json_values, max_size=len(names) + 1)


def _validate(model: type[ModelT], raw: bytes | str) -> ModelT | None:
    """Accepted (the instance) or refused (None); any other exception fails the test."""
    try:
        return model.model_validate_json(raw)
    except ValidationError:
        return None


def _round_trips(instance: BaseModel) -> None:
    again = type(instance).model_validate_json(instance.model_dump_json())
    assert again == instance


@settings(max_examples=200)
@given(st.sampled_from(INBOUND), st.binary(max_size=200) | st.text(max_size=200))
def test_arbitrary_bytes_are_accepted_or_refused_never_crash(
    model: type[BaseModel], raw: bytes | str
) -> None:
    accepted = _validate(model, raw)
    if accepted is not None:
        _round_trips(accepted)


# 100 here (about 15 s): each example builds a nested document; the schemathesis
# bench sends thousands more through the HTTP layer (docs/reliability.md).
@settings(max_examples=100)
@given(st.sampled_from(INBOUND).flatmap(lambda m: st.tuples(st.just(m), _shaped_like(m))))
def test_arbitrary_json_is_accepted_or_refused_and_what_is_accepted_round_trips(
    case: tuple[type[BaseModel], dict[str, Any]],
) -> None:
    model, document = case
    accepted = _validate(model, json.dumps(document))
    if accepted is not None:
        _round_trips(accepted)
        if isinstance(accepted, PrintJob):
            _assert_valid_job(accepted)
        if isinstance(accepted, EnrolRequest):
            _assert_valid_enrolment(accepted)


def _assert_valid_job(job: PrintJob) -> None:
    assert re.fullmatch(ATTENDEE_ID_PATTERN, job.attendee_id) and 4 <= len(job.attendee_id) <= 48
    assert re.fullmatch(PRINTER_TARGET_PATTERN, job.printer_target)
    assert re.fullmatch(IDEMPOTENCY_KEY_PATTERN, job.idempotency_key)
    assert 8 <= len(job.idempotency_key) <= 80
    assert 0 <= job.priority <= 1000 and type(job.priority) is int
    assert 1 <= len(job.badge_pdf_ref) <= 512
    parts = urlsplit(job.badge_pdf_ref)
    assert parts.scheme in PDF_REF_SCHEMES
    assert (parts.netloc + parts.path).lower().endswith(".pdf")


def _assert_valid_enrolment(body: EnrolRequest) -> None:
    assert re.fullmatch(CODE_PATTERN, body.code)
    assert re.fullmatch(PRINTER_ID_PATTERN, body.printer_id)
    assert re.fullmatch(AGENT_ID_PATTERN, body.agent_id)


# --------------------------------------------------------------------------- valid jobs


def _pattern(regex: str) -> st.SearchStrategy[str]:
    return st.from_regex(regex, fullmatch=True)


url_pdf_refs = st.builds(
    lambda scheme, host, path: f"{scheme}://{host}/{path}.pdf",
    st.sampled_from([s for s in PDF_REF_SCHEMES if s not in ("artifact", "file")]),
    _pattern(r"[a-z0-9.-]{1,30}"), _pattern(r"[A-Za-z0-9/_.-]{0,60}"),
)  # fmt: skip
# A file is local: no host but localhost, an absolute path with no '..' segment.
file_pdf_refs = st.builds(
    lambda host, path: f"file://{host}/{path}.pdf",
    st.sampled_from(["", "localhost"]), _pattern(r"[A-Za-z0-9/_-]{0,60}"),
)  # fmt: skip
# An artifact is named by its SHA-256 (both spellings the agent reads).
artifact_refs = _pattern(r"artifact:///?[0-9a-f]{64}\.pdf")
pdf_refs = url_pdf_refs | file_pdf_refs | artifact_refs
# The documented patterns with their length limits folded in (no filtering needed).
valid_jobs = st.fixed_dictionaries(
    {
        "attendee_id": _pattern(r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{3,47}$"),
        "badge_pdf_ref": pdf_refs,
        "printer_target": _pattern(PRINTER_TARGET_PATTERN),
        "idempotency_key": _pattern(r"^[\x21-\x7e]{8,80}$"),
    },
    optional={"priority": st.integers(0, 1000)},
)


@settings(max_examples=150)
@given(valid_jobs)
def test_every_job_built_from_the_documented_patterns_is_accepted(document: dict[str, Any]) -> None:
    job = _validate(PrintJob, json.dumps(document))
    assert job is not None, document
    _assert_valid_job(job)
    _round_trips(job)


STRING_FIELDS = ["attendee_id", "badge_pdf_ref", "printer_target", "idempotency_key"]


@settings(max_examples=300)
@given(valid_jobs, st.sampled_from(STRING_FIELDS), st.text(max_size=100))
def test_no_invalid_string_gets_into_a_job(
    document: dict[str, Any], field: str, value: str
) -> None:
    # GIVEN a valid job with one string field replaced by arbitrary text
    job = _validate(PrintJob, json.dumps({**document, field: value}))
    # THEN it is refused, or what was accepted is valid (whitespace stripped)
    if job is not None:
        _assert_valid_job(job)


@settings(max_examples=100)
@given(
    _pattern(CODE_PATTERN), _pattern(PRINTER_ID_PATTERN), _pattern(AGENT_ID_PATTERN),
    st.text(max_size=80),
)  # fmt: skip
def test_enrolment_bodies_take_exactly_the_documented_strings(
    code: str, printer_id: str, agent_id: str, junk: str
) -> None:
    valid = {"code": code, "printer_id": printer_id, "agent_id": agent_id}
    accepted = _validate(EnrolRequest, json.dumps(valid))
    assert accepted is not None
    _round_trips(accepted)
    for field in valid:
        mutated = _validate(EnrolRequest, json.dumps({**valid, field: junk}))
        if mutated is not None:
            _assert_valid_enrolment(mutated)


@settings(max_examples=100)
@given(st.lists(_pattern(JOB_ID_PATTERN) | st.text(max_size=24), max_size=5))
def test_redrive_ids_must_be_job_ids(ids: list[str]) -> None:
    accepted = _validate(RedriveRequest, json.dumps({"ids": ids}))
    all_job_ids = all(re.fullmatch(JOB_ID_PATTERN, i) for i in ids)
    assert (accepted is not None) == all_job_ids
