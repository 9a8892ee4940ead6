"""Wire models of the agent API: heartbeat, lease, start, ack.

Apart from the kiosk and operator models (badgeline.protocol.models, which
re-exports these) because the agent imports only these: every pydantic model
built costs memory, and a Pi agent's budget is 45 MB (docs/benchmarks.md).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from badgeline.protocol.failures import FailureReason
from badgeline.protocol.job import PrintJob
from badgeline.protocol.states import (
    AckResult,
    Confirmation,
    JobState,
    PaperLevel,
    PrinterLanguage,
    PrinterState,
)

MAX_ERROR_TEXT = 500


class StrictModel(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", str_strip_whitespace=True)


class ResponseModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PrinterHealthReport(StrictModel):
    """What the agent's status probe saw at its printer."""

    reachable: bool
    jammed: bool = False
    cover_open: bool = False
    paper: PaperLevel = PaperLevel.OK
    ribbon_pct: int | None = Field(default=None, ge=0, le=100)
    # Unset for printers without a pause state (ESC/POS, Brother QL): agents send only
    # what they know, so an ESC/POS agent's report is what older coordinators take.
    paused: bool | None = Field(
        default=None, description="the printer is paused (a Zebra's PAUSE key, or ~PP)"
    )
    detail: str | None = Field(default=None, max_length=200)


class HeartbeatRequest(StrictModel):
    agent_id: str = Field(min_length=1, max_length=64)
    version: str = Field(min_length=1, max_length=32)
    health: PrinterHealthReport
    journal: dict[str, int] = Field(default_factory=dict, max_length=32)
    labels: list[str] = Field(default_factory=list, max_length=16)
    confirmation: Confirmation | None = Field(
        default=None,
        description="how this printer's badges are confirmed printed; none: not known yet",
    )
    language: PrinterLanguage | None = Field(
        default=None,
        description="the language the printer speaks; none: escpos (agents leave it out for"
        " an ESC/POS printer, so their heartbeats stay what older coordinators take)",
    )


class HeartbeatResponse(ResponseModel):
    state: PrinterState
    paused: bool
    heartbeat_interval_s: float


class LeasedPrintJob(PrintJob):
    """A leased job as its agent receives it: the job as it was accepted (PrintJob's
    fields), and what the lease adds. Lenient where PrintJob is strict: the payload
    was checked at acceptance, and a newer coordinator may add fields."""

    model_config = ConfigDict(strict=False, extra="ignore")

    # The deadline is the coordinator's to keep (it refuses a late start): not sent,
    # so a job reaches every agent, older ones too, in the shape they know.
    expire_after_s: int | None = Field(default=None, exclude=True)
    attempts: int = Field(default=0, description="failed attempts before this lease")
    possible_duplicate: bool = Field(
        default=False, description="an earlier lease of this job may have printed it"
    )
    correlation_id: str = ""


class LeasedJob(ResponseModel):
    job_id: str
    lease_id: str
    lease_ttl_s: float
    job: LeasedPrintJob


class LeaseResponse(ResponseModel):
    jobs: list[LeasedJob]


class RenewRequest(StrictModel):
    lease_id: str = Field(min_length=1, max_length=80)


class RenewResponse(ResponseModel):
    renewed: bool = Field(description="false: the lease is gone; do not ask for the start")
    lease_ttl_s: float = Field(description="how long the lease runs from now, when renewed")
    state: JobState | None = Field(default=None, description="the job's state, when not renewed")


class StartRequest(StrictModel):
    lease_id: str = Field(min_length=1, max_length=80)


class StartResponse(ResponseModel):
    granted: bool
    fence: int | None = Field(default=None, description="grows with every grant of this job")
    reason: str | None = None


class AckRequest(StrictModel):
    lease_id: str = Field(min_length=1, max_length=80)
    result: AckResult
    error: str | None = Field(default=None, max_length=MAX_ERROR_TEXT)
    fence: int | None = Field(default=None, ge=0)
    reason: FailureReason | None = Field(
        default=None,
        description="why a `failed` result failed (badgeline.protocol.failures): a permanent"
        " reason fails the job at once, a transient one (or none) retries it",
    )


class AckResponse(ResponseModel):
    job_id: str
    state: JobState
    recorded: bool = Field(description="false when this exact ack was already recorded")
