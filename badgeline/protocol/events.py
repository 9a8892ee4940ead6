"""A job event: one change of a job's state, as GET /v1/events streams it (the SSE
`data` of an `event: job`) and a webhook posts it (docs/api.md, "Job events").

Lenient, as a reader's model should be: a newer coordinator may add fields.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from badgeline.protocol.failures import FailureReason
from badgeline.protocol.states import JobState


class JobEvent(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str = Field(
        description="the event's place in the venue's event stream, `<ms>-<seq>`: the SSE"
        " `id`, and what Last-Event-ID resumes after; it grows with every event"
    )
    job_id: str
    state: JobState = Field(description="the state the job entered")
    previous_state: JobState | None = Field(description="the state it left; none at acceptance")
    printer_id: str = Field(description="the printer the job is on (or was, once closed)")
    attempts: int = Field(description="failed print attempts so far")
    fence: int = Field(description="start grants so far: a `printing` event carries the new one")
    possible_duplicate: bool = Field(description="an earlier attempt may have printed it")
    at: float = Field(description="when the change happened: Unix seconds, Redis clock")
    created_at: float = Field(description="when the job was accepted")
    reason: str = Field(description="the history entry's reason, for people")
    failure_reason: FailureReason | None = Field(
        default=None, description="on `retrying` and `failed`: the classified reason"
    )
    idempotency_key: str = Field(description="the key the job was submitted with")
    expires_at: float | None = Field(
        default=None, description="the job's deadline (expire_after_s), if it has one"
    )
