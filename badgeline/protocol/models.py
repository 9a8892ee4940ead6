"""Wire models: the JSON bodies kiosks, agents and operators exchange.

Inbound models are strict (no type coercion, unknown fields rejected) because a
malformed job must fail at acceptance, not at the thermal head. The agent API's
models live in agent_models (the agent imports only those) and are re-exported
here, so this module is the whole contract.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field

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
    JOB_ID_PATTERN,
    PRINTER_ID_PATTERN,
    PRINTER_TARGET_PATTERN,
)
from badgeline.protocol.job import PDF_REF_SCHEMES, JobFields, PrintJob
from badgeline.protocol.states import JobState

PrinterId = Annotated[str, Field(pattern=PRINTER_ID_PATTERN)]
JobId = Annotated[str, Field(pattern=JOB_ID_PATTERN)]


# --------------------------------------------------------------------------- kiosk


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


class JobSummary(JobFields, ResponseModel):
    """A job without its history (a queue's page lists these): the job as it was
    submitted (JobFields), and its life so far."""

    model_config = ConfigDict(extra="forbid")

    job_id: str
    state: JobState
    printer_id: str
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
    expires_at: float | None = Field(
        default=None,
        description="Unix time (Redis clock) after which no printer may start it; none: no"
        " deadline",
    )


class JobView(JobSummary):
    """A job with its history."""

    history: list[HistoryEntry]


class CancelResult(ResponseModel):
    job_id: str
    state: JobState


# --------------------------------------------------------------------------- ops


class MoveRequest(StrictModel):
    printer_target: str = Field(
        pattern=PRINTER_TARGET_PATTERN, max_length=40,
        description="a printer id, pool:<name> or auto, as a job's target",
    )  # fmt: skip


class MoveResult(ResponseModel):
    job_id: str
    state: JobState
    printer_id: str = Field(description="the printer the job waits for now")
    moved_from: str = Field(description="the printer it waited for before")
    moved: bool = Field(description="false: it was on that printer already; nothing changed")


class CanceledJobs(ResponseModel):
    printer_id: str
    canceled: list[str] = Field(description="the jobs canceled, in print order")


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
    "CanceledJobs",
    "DeadLetter",
    "ErrorBody",
    "ErrorDetail",
    "ErrorField",
    "HeartbeatRequest",
    "HeartbeatResponse",
    "HistoryEntry",
    "JobId",
    "JobSummary",
    "JobView",
    "LeaseResponse",
    "LeasedJob",
    "MoveRequest",
    "MoveResult",
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
