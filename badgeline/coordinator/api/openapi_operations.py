"""What the OpenAPI document says about each route: summary, roles, bodies, answers.

One entry per (method, path) the coordinator registers; `openapi.build_openapi`
walks the app's routes and looks each one up here, so a route added without an
entry shows up as `x-undocumented` (and fails tests/coordinator/test_openapi.py).
Request and response bodies are the pydantic models the handlers read and
write; `JSON_OBJECT` marks a JSON answer that has no model (the reports),
and a string a media type that is not JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from pydantic import BaseModel

from badgeline.coordinator.api import agent as api_agent
from badgeline.coordinator.api import enrolment, reprint
from badgeline.coordinator.api import events as api_events
from badgeline.coordinator.api import kiosk as api_kiosk
from badgeline.coordinator.api import ops as api_ops
from badgeline.coordinator.api import printers as api_printers
from badgeline.coordinator.api import reports as api_reports
from badgeline.protocol import models as m
from badgeline.protocol import pages

JSON_OBJECT: Final = "json-object"
HTML: Final = "text/html"
PDF: Final = "application/pdf"
Body = type[BaseModel] | str | None


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    summary: str
    roles: tuple[str, ...]
    request: Body
    responses: dict[int, Body]
    query_model: type[BaseModel] | None = None
    long_lived: bool = False  # a stream: no client should wait for its end
    # What a generated client calls it (snake_case, a verb first) and the module it
    # goes in: one of TAGS.
    operation_id: str = field(kw_only=True)
    tag: str = field(kw_only=True)

    @property
    def key(self) -> tuple[str, str]:
        return self.method, self.path


# The document's tags, in its order: who calls the operations under each.
TAGS: dict[str, str] = {
    "kiosk": "A registration desk: upload a badge, submit it, follow the job",
    "agent": "The print agent beside each printer: heartbeat, lease, start, ack",
    "operator": "The venue's operators: printers, queues, dead letters, moves, reprints",
    "reports": "Operators' reports: queues, alerts, reconciliation, statistics",
    "enrolment": "One-time codes that a new agent trades for its token",
    "metrics": "Prometheus metrics, for a `metrics` or operator token",
    "dashboard": "The operators' dashboard in a browser",
    "meta": "Liveness and this document",
}

KIOSK, OPERATOR, AGENT = ("kiosk", "operator"), ("operator",), ("agent",)
ANY_CALLER = ("agent", "kiosk", "operator")
FORM = "application/x-www-form-urlencoded"

OPERATIONS: tuple[Operation, ...] = (
    # ---- kiosk
    Operation("post", "/v1/jobs", "Submit a badge print job", KIOSK, m.PrintJob,
              {201: m.SubmitAccepted, 200: m.SubmitAccepted, 409: m.ErrorBody, 429: m.ErrorBody,
               503: m.ErrorBody},
              operation_id="submit_job", tag="kiosk"),
    Operation("get", "/v1/jobs/{job_id}", "A job with its history", KIOSK, None,
              {200: m.JobView},
              operation_id="get_job", tag="kiosk"),
    Operation("get", "/v1/jobs", "An attendee's jobs, oldest first (paged)", KIOSK, None,
              {200: pages.JobPage}, query_model=api_kiosk.AttendeeQuery,
              operation_id="list_attendee_jobs", tag="kiosk"),
    Operation("post", "/v1/jobs/{job_id}/cancel", "Cancel a job before it prints", KIOSK, None,
              {200: m.CancelResult, 409: m.ErrorBody},
              operation_id="cancel_job", tag="kiosk"),
    Operation("get", "/v1/events",
              "Job state changes as server-sent events (`event: job`, each `data:` a JobEvent"
              " of components/schemas), until closed; resume with Last-Event-ID", KIOSK, None,
              {200: "text/event-stream", 410: m.ErrorBody, 429: m.ErrorBody},
              query_model=api_events.EventsQuery, long_lived=True,
              operation_id="stream_job_events", tag="kiosk"),
    Operation("put", "/v1/artifacts/{name}", "Store a badge PDF under its SHA-256 (`<hex>.pdf`)",
              KIOSK, PDF, {201: pages.ArtifactStored, 200: pages.ArtifactStored, 415: m.ErrorBody,
                           422: m.ErrorBody},
              operation_id="upload_artifact", tag="kiosk"),
    Operation("get", "/v1/artifacts/{name}", "Fetch a stored badge PDF", ANY_CALLER, None,
              {200: PDF},
              operation_id="download_artifact", tag="kiosk"),
    # ---- agent
    Operation("post", "/v1/agents/{printer_id}/heartbeat", "Report printer health", AGENT,
              m.HeartbeatRequest, {200: m.HeartbeatResponse},
              operation_id="send_heartbeat", tag="agent"),
    Operation("post", "/v1/agents/{printer_id}/lease", "Long-poll for jobs", AGENT, None,
              {200: m.LeaseResponse}, query_model=api_agent.LeaseQuery,
              operation_id="lease_jobs", tag="agent"),
    Operation("post", "/v1/agents/{printer_id}/jobs/{job_id}/start", "Ask for the start grant",
              AGENT, m.StartRequest, {200: m.StartResponse, 409: m.ErrorBody},
              operation_id="start_job", tag="agent"),
    Operation("post", "/v1/agents/{printer_id}/jobs/{job_id}/renew",
              "Keep a lease a badge waiting behind a slow printer still needs", AGENT,
              m.RenewRequest, {200: m.RenewResponse},
              operation_id="renew_lease", tag="agent"),
    Operation("post", "/v1/agents/{printer_id}/jobs/{job_id}/ack", "Report a print result",
              AGENT, m.AckRequest, {200: m.AckResponse},
              operation_id="ack_job", tag="agent"),
    # ---- operator: dead letters, queues, printers
    Operation("get", "/v1/dead-letters", "Shed and failed jobs, oldest first (paged)", OPERATOR,
              None, {200: pages.DeadLetterPage}, query_model=api_ops.PageQuery,
              operation_id="list_dead_letters", tag="operator"),
    Operation("post", "/v1/dead-letters/redrive", "Redrive through the dedupe gate", OPERATOR,
              m.RedriveRequest, {200: m.RedriveResponse},
              operation_id="redrive_dead_letters", tag="operator"),
    Operation("get", "/v1/queues/{printer_id}", "Peek a printer queue in print order (paged)",
              OPERATOR, None, {200: pages.QueuePeek}, query_model=api_ops.PeekQuery,
              operation_id="peek_queue", tag="operator"),
    Operation("get", "/v1/printers", "Every printer: health, state, queue (paged)", OPERATOR,
              None, {200: pages.PrinterPage}, query_model=api_ops.PageQuery,
              operation_id="list_printers", tag="operator"),
    Operation("post", "/v1/printers/{printer_id}/pause", "Stop leasing to a printer", OPERATOR,
              api_printers.PauseRequest, {200: JSON_OBJECT},
              operation_id="pause_printer", tag="operator"),
    Operation("post", "/v1/printers/{printer_id}/resume", "Lease to a paused printer again",
              OPERATOR, None, {200: JSON_OBJECT},
              operation_id="resume_printer", tag="operator"),
    Operation("post", "/v1/printers/{printer_id}/drain", "Move a printer's queue to its peers",
              OPERATOR, api_printers.DrainRequest, {200: JSON_OBJECT},
              operation_id="drain_printer", tag="operator"),
    Operation("post", "/v1/printers/{printer_id}/reject",
              "Take no new jobs for a printer (its queue keeps printing)", OPERATOR,
              api_printers.RejectRequest, {200: JSON_OBJECT},
              operation_id="reject_printer", tag="operator"),
    Operation("post", "/v1/printers/{printer_id}/accept", "Take new jobs for a printer again",
              OPERATOR, None, {200: JSON_OBJECT},
              operation_id="accept_printer", tag="operator"),
    Operation("post", "/v1/queues/{printer_id}/cancel",
              "Cancel every job of a printer that has not started", OPERATOR, None,
              {200: m.CanceledJobs},
              operation_id="cancel_queue", tag="operator"),
    Operation("post", "/v1/jobs/{job_id}/move",
              "Move a job that has not started to another printer or pool", OPERATOR,
              m.MoveRequest, {200: m.MoveResult, 409: m.ErrorBody, 503: m.ErrorBody},
              operation_id="move_job", tag="operator"),
    Operation("post", "/v1/rebalance", "Spread queued jobs over healthy printers", OPERATOR,
              None, {200: JSON_OBJECT},
              operation_id="rebalance_queues", tag="operator"),
    Operation("get", "/v1/failovers", "Failover decisions, newest first (paged)", OPERATOR, None,
              {200: pages.FailoverPage}, query_model=api_ops.PageQuery,
              operation_id="list_failovers", tag="operator"),
    # ---- reports (operator) and reprint (a kiosk its own jobs, an operator any)
    Operation("get", "/v1/queues", "Queue depths, head waits and stalls (paged)", OPERATOR, None,
              {200: pages.QueueReport}, query_model=api_reports.QueuesQuery,
              operation_id="list_queues", tag="reports"),
    Operation("get", "/v1/alerts", "Open alerts: dead and stalled printers, parked jobs (paged)",
              OPERATOR, None, {200: pages.AlertPage}, query_model=api_reports.QueuesQuery,
              operation_id="list_alerts", tag="reports"),
    Operation("get", "/v1/alerts/events", "Paper alert events, newest first (paged)", OPERATOR,
              None, {200: pages.AlertEventPage}, query_model=api_ops.PageQuery,
              operation_id="list_alert_events", tag="reports"),
    Operation("get", "/v1/reconcile", "The reconciliation report and its findings (paged)",
              OPERATOR, None, {200: pages.ReconcilePage}, query_model=api_reports.ReconcileQuery,
              operation_id="reconcile", tag="reports"),
    Operation("get", "/v1/stats", "Badges printed by printer, hour or source (paged)", OPERATOR,
              None, {200: pages.StatsPage}, query_model=api_reports.StatsQuery,
              operation_id="get_stats", tag="reports"),
    Operation("post", "/v1/jobs/{job_id}/reprint", "Reprint a job as a new, linked job",
              KIOSK, reprint.ReprintRequest,
              {201: m.JobView, 200: m.JobView, 409: m.ErrorBody, 503: m.ErrorBody},
              operation_id="reprint_job", tag="kiosk"),
    Operation("get", "/metrics", "Prometheus metrics", ("operator", "metrics"), None,
              {200: "text/plain"},
              operation_id="get_metrics", tag="metrics"),
    # ---- enrolment
    Operation("post", "/v1/enrolment-codes", "Create a single-use enrolment code for a printer",
              OPERATOR, enrolment.EnrolmentCodeRequest, {201: enrolment.EnrolmentCodeIssued},
              operation_id="create_enrolment_code", tag="enrolment"),
    Operation("post", "/v1/enrol", "Exchange an enrolment code for an agent token (no token)",
              (), enrolment.EnrolRequest,
              {201: enrolment.EnrolResult, 403: m.ErrorBody, 410: m.ErrorBody, 422: m.ErrorBody},
              operation_id="enrol_agent", tag="enrolment"),
    # ---- dashboard (a browser's: session cookie, or an operator token)
    Operation("get", "/", "The dashboard, or its sign-in page", (), None, {200: HTML},
              operation_id="get_dashboard", tag="dashboard"),
    Operation("get", "/dashboard/static/{name}", "A dashboard asset (script, style)", (), None,
              {200: "text/css", 404: m.ErrorBody},
              operation_id="get_dashboard_asset", tag="dashboard"),
    Operation("post", "/dashboard/login", "Sign in with an operator token (form field `token`)",
              (), FORM, {303: None, 401: HTML, 403: HTML},
              operation_id="sign_in", tag="dashboard"),
    Operation("post", "/dashboard/logout", "Sign out (needs the CSRF header with a cookie)",
              (), None, {200: JSON_OBJECT, 403: m.ErrorBody},
              operation_id="sign_out", tag="dashboard"),
    Operation("get", "/dashboard/session", "The signed-in session's CSRF token", (), None,
              {200: JSON_OBJECT, 401: m.ErrorBody},
              operation_id="get_dashboard_session", tag="dashboard"),
    Operation("get", "/dashboard/snapshot", "Everything the dashboard shows, once", OPERATOR,
              None, {200: JSON_OBJECT},
              operation_id="get_dashboard_snapshot", tag="dashboard"),
    Operation("get", "/dashboard/stream", "The snapshot as server-sent events, until closed",
              OPERATOR, None, {200: "text/event-stream"}, long_lived=True,
              operation_id="stream_dashboard", tag="dashboard"),
    # ---- anyone
    Operation("get", "/healthz", "Liveness and Redis reachability", (), None,
              {200: JSON_OBJECT, 503: JSON_OBJECT},
              operation_id="get_health", tag="meta"),
    Operation("get", "/v1/openapi.json", "This document", (), None, {200: JSON_OBJECT},
              operation_id="get_openapi", tag="meta"),
)  # fmt: skip

BY_KEY: dict[tuple[str, str], Operation] = {op.key: op for op in OPERATIONS}
