"""The wire contract that the coordinator, the agents and kiosks share."""

from badgeline.protocol.errors import ErrorCode
from badgeline.protocol.ids import PRINTER_ID_PATTERN, PRINTER_TARGET_PATTERN, is_printer_id
from badgeline.protocol.models import (
    AckRequest,
    AckResponse,
    ErrorBody,
    HeartbeatRequest,
    HeartbeatResponse,
    JobView,
    LeaseResponse,
    PrinterHealthReport,
    PrintJob,
    StartRequest,
    StartResponse,
    SubmitAccepted,
)
from badgeline.protocol.states import AckResult, JobState, PaperLevel, PrinterState

__all__ = [
    "PRINTER_ID_PATTERN",
    "PRINTER_TARGET_PATTERN",
    "AckRequest",
    "AckResponse",
    "AckResult",
    "ErrorBody",
    "ErrorCode",
    "HeartbeatRequest",
    "HeartbeatResponse",
    "JobState",
    "JobView",
    "LeaseResponse",
    "PaperLevel",
    "PrintJob",
    "PrinterHealthReport",
    "PrinterState",
    "StartRequest",
    "StartResponse",
    "SubmitAccepted",
    "is_printer_id",
]
