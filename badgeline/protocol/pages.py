"""The lists the API answers, one page at a time, and the reports around them.

Every list is `{"items": [...], "next": <cursor> | null}`, beside fields that
describe the whole list; `next` is passed back as `after` for the page after
(docs/api.md, "Pagination"). Items the coordinator builds as plain objects (a
printer's summary, a failover decision) are open objects here; their fields are
in docs/api.md.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from badgeline.protocol.agent_models import ResponseModel
from badgeline.protocol.models import DeadLetter, JobSummary, JobView

NEXT_DESCRIPTION = ("the cursor of the next page, to pass as `after`; null on the last page "
                    "(an opaque string: do not build or change one)")  # fmt: skip
Finding = Literal["printed_more_than_once", "possible_duplicates", "not_terminal"]


class ListPage(ResponseModel):
    next: str | None = Field(description=NEXT_DESCRIPTION)


class JobPage(ListPage):
    """An attendee's jobs, oldest first."""

    items: list[JobView]


class DeadLetterPage(ListPage):
    """Dead-lettered jobs, oldest first."""

    items: list[DeadLetter]


class QueuePeek(ListPage):
    """A printer's queue in print order; `depth` counts all of it."""

    printer_id: str
    depth: int = Field(description="jobs waiting in this queue, all pages together")
    items: list[JobSummary]


class PrinterPage(ListPage):
    """Every printer's summary, by printer id."""

    items: list[dict[str, Any]]


class QueueReport(ListPage):
    """Every printer's queue, by printer id, flagged."""

    high_water_mark: int
    skew_margin: int
    stall_after_s: float
    items: list[dict[str, Any]]


class FailoverPage(ListPage):
    """Failover decisions, newest first."""

    items: list[dict[str, Any]]


class Alert(ResponseModel):
    kind: str
    severity: Literal["critical", "warning"]
    printer_id: str | None
    message: str


class AlertPage(ListPage):
    """The alerts active now: each printer's, by printer id, then the venue's."""

    items: list[Alert]


class AlertEventPage(ListPage):
    """Alert events (paper low, out, ok), newest first."""

    items: list[dict[str, Any]]


class ReconcileFinding(ResponseModel):
    finding: Finding = Field(description="the list the job is on")
    job_id: str
    state: str
    attendee_id: str
    printer_id: str
    age_s: float
    prints: int


class ReconcilePage(ListPage):
    """The counts, and the jobs found on each list: printed more than once, then
    possible duplicates, then not terminal, each by job id."""

    deadline_s: float
    truncated: bool
    counts: dict[str, Any]
    findings: dict[Finding, int] = Field(description="how many jobs each list has")
    items: list[ReconcileFinding]


class StatsPage(ListPage):
    """Badges printed grouped by printer, hour or source, by that key."""

    by: Literal["printer", "hour", "source"]
    totals: dict[str, int]
    reprint_rate: float
    failure_reasons: list[dict[str, Any]]
    items: list[dict[str, Any]]


class ArtifactStored(ResponseModel):
    ref: str = Field(description="the `badge_pdf_ref` to submit the badge with")
    sha256: str
    size: int
