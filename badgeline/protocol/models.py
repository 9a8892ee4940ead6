"""Wire models: the JSON bodies kiosks, agents and operators exchange.

Inbound models are strict (no type coercion, unknown fields rejected) because a
malformed job must fail at acceptance, not at the thermal head. The agent API's
models live in agent_models (the agent imports only those) and are re-exported
here, so this module is the whole contract.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal
from urllib.parse import unquote, urlsplit

from pydantic import ConfigDict, Field, field_validator

from badgeline.protocol.agent_models import (
    MAX_ERROR_TEXT,
    AckRequest,
    AckResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    LeasedJob,
    LeaseResponse,
    PrinterHealthReport,
    RenewRequest,
    RenewResponse,
    ResponseModel,
    StartRequest,
    StartResponse,
    StrictModel,
)
from badgeline.protocol.failures import FailureReason
from badgeline.protocol.ids import (
    ATTENDEE_ID_PATTERN,
    IDEMPOTENCY_KEY_PATTERN,
    JOB_ID_PATTERN,
    PRINTER_ID_PATTERN,
    PRINTER_TARGET_PATTERN,
)
from badgeline.protocol.states import JobState

PDF_REF_SCHEMES = ("https", "http", "file", "artifact")
# C0 controls and DEL: in no usable badge reference.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_ARTIFACT_NAME = re.compile(r"^[0-9a-f]{64}\.pdf$")
_URL_CHARS = r"[^\x00-\x1f\x7f?#]*"  # no control characters, up to a query or fragment
_TAIL = r"\.[pP][dD][fF](?:[?#][^\x00-\x1f\x7f]*)?"
PDF_REF_PATTERN = (
    r"^(?!.*%(?:[01][0-9A-Fa-f]|7[Ff]))"  # no %-encoded control characters either
    rf"(?:https?://{_URL_CHARS}{_TAIL}"
    # file: local, absolute, no '..' segment (nor a %-encoded one)
    rf"|file://(?:localhost)?/(?![^?#]*/(?:\.|%2[eE]){{2}}(?:/|[?#]|$)){_URL_CHARS}{_TAIL}"
    r"|artifact:///?[0-9a-f]{64}\.pdf)$"
)

PrinterId = Annotated[str, Field(pattern=PRINTER_ID_PATTERN)]
JobId = Annotated[str, Field(pattern=JOB_ID_PATTERN)]


# --------------------------------------------------------------------------- kiosk


class PrintJob(StrictModel):
    """What a kiosk submits: one badge for one attendee on one target."""

    attendee_id: str = Field(min_length=4, max_length=48, pattern=ATTENDEE_ID_PATTERN)
    badge_pdf_ref: str = Field(
        min_length=1,
        max_length=512,
        description="a URL with scheme https, http, file or artifact whose path ends in .pdf",
        # Documents the validator below for API clients and fuzzers (not enforced
        # by itself: the validator is, and its messages say what is wrong).
        json_schema_extra={"pattern": PDF_REF_PATTERN},
        examples=[
            "artifact://9f3c1e5a0b6d4f2e8a7c9b1d3e5f7a9c0b2d4e6f8a1c3e5b7d9f0a2c4e6b8d0f.pdf",
            "https://badges.example/att_44817.pdf",
        ],
    )
    printer_target: str = Field(pattern=PRINTER_TARGET_PATTERN, max_length=40)
    priority: int = Field(default=100, ge=0, le=1000)
    idempotency_key: str = Field(min_length=8, max_length=80, pattern=IDEMPOTENCY_KEY_PATTERN)

    @field_validator("badge_pdf_ref")
    @classmethod
    def require_pdf_reference(cls, value: str) -> str:
        # Refused here, not at the agent: a control character (raw or %-encoded)
        # names no file and no URL a badge server serves, and a NUL made every
        # agent that leased it fail on the OS call.
        if _CONTROL.search(value) or _CONTROL.search(unquote(value)):
            raise ValueError(
                "badge_pdf_ref contains a control character (raw or %-encoded, e.g. %00 or"
                " %0A); a badge reference names a file or URL without them"
            )
        parts = urlsplit(value)
        if parts.scheme not in PDF_REF_SCHEMES:
            raise ValueError(
                f"badge_pdf_ref must be a URL with scheme {', '.join(PDF_REF_SCHEMES)}"
            )
        # artifact://<sha256>.pdf has its name in the "host" part of the URL.
        if not (parts.netloc + parts.path).lower().endswith(".pdf"):
            raise ValueError("badge_pdf_ref must name a rendered .pdf file")
        if parts.scheme == "file" and (
            parts.netloc not in ("", "localhost") or ".." in unquote(parts.path).split("/")
        ):
            raise ValueError(
                "a file ref names a local absolute path without '..' segments:"
                " file:///folder/badge.pdf"
            )
        # Caught here, a malformed artifact name is the kiosk's 422, not a badge
        # that fails later at the agent (which checks the same shape).
        if parts.scheme == "artifact" and not _ARTIFACT_NAME.match(
            parts.netloc or parts.path.lstrip("/")  # the name, as the agent reads it
        ):
            raise ValueError(
                "an artifact ref names an uploaded PDF by its SHA-256: artifact://<64 lowercase "
                "hex digits>.pdf, as PUT /v1/artifacts/<sha256>.pdf answers it"
            )
        return value


class SubmitAccepted(ResponseModel):
    job_id: str
    state: JobState
    printer_id: str
    position: int = Field(description="jobs ahead of this one in its printer queue")
    duplicate: bool
    correlation_id: str


class SubmitShed(ResponseModel):
    job_id: str
    state: Literal[JobState.DEAD_LETTERED]
    reason: str
    printer_id: str
    correlation_id: str


class HistoryEntry(ResponseModel):
    at: float = Field(description="Unix time in seconds, from the Redis clock")
    from_: str | None = Field(alias="from")
    to: str
    actor: str
    reason: str

    model_config = ConfigDict(populate_by_name=True, extra="forbid")


class JobView(ResponseModel):
    job_id: str
    state: JobState
    attendee_id: str
    badge_pdf_ref: str
    printer_target: str
    printer_id: str
    priority: int
    idempotency_key: str
    attempts: int
    possible_duplicate: bool
    reprint_of: str | None
    created_at: float
    updated_at: float
    last_error: str | None = None
    failure_reason: FailureReason | None = Field(
        default=None, description="the classified reason of the last failed attempt"
    )
    failed_for_good: bool = Field(
        default=False,
        description="failed for a permanent reason (the badge itself): no retry or redrive"
        " can print it; fix the badge and submit a new job",
    )
    prints: int = Field(description="physical prints reported by agents")
    history: list[HistoryEntry]


class JobList(ResponseModel):
    jobs: list[JobView]


class CancelResult(ResponseModel):
    job_id: str
    state: JobState


# --------------------------------------------------------------------------- ops


class RedriveRequest(StrictModel):
    ids: list[JobId] | None = Field(default=None, max_length=1000)


class RedriveOutcome(ResponseModel):
    job_id: str
    outcome: Literal["queued", "suppressed", "still_shed", "refused", "not_dead_lettered"]
    detail: str | None = None


class RedriveResponse(ResponseModel):
    results: list[RedriveOutcome]


class DeadLetter(ResponseModel):
    job_id: str
    reason: str
    printer_id: str
    idempotency_key: str
    correlation_id: str
    dead_lettered_at: float


class DeadLetterList(ResponseModel):
    dead_letters: list[DeadLetter]


class ErrorField(ResponseModel):
    loc: list[str | int]
    msg: str


class ErrorDetail(ResponseModel):
    code: str
    message: str
    fields: list[ErrorField] = Field(default_factory=list)


class ErrorBody(ResponseModel):
    """Some errors add fields next to `error` (a shed job's `job_id` and `state`, a
    refused start's `granted` and `reason`, a 429's `limit`: docs/api.md), so the
    schema allows them."""

    model_config = ConfigDict(extra="allow")
    error: ErrorDetail


# Everything, the agent API's models included: this module is the whole contract.
__all__ = [
    "MAX_ERROR_TEXT",
    "PDF_REF_SCHEMES",
    "AckRequest",
    "AckResponse",
    "CancelResult",
    "DeadLetter",
    "DeadLetterList",
    "ErrorBody",
    "ErrorDetail",
    "ErrorField",
    "HeartbeatRequest",
    "HeartbeatResponse",
    "HistoryEntry",
    "JobId",
    "JobList",
    "JobView",
    "LeaseResponse",
    "LeasedJob",
    "PrintJob",
    "PrinterHealthReport",
    "PrinterId",
    "RedriveOutcome",
    "RedriveRequest",
    "RedriveResponse",
    "RenewRequest",
    "RenewResponse",
    "ResponseModel",
    "StartRequest",
    "StartResponse",
    "StrictModel",
    "SubmitAccepted",
    "SubmitShed",
]
