"""Stable error codes and the one exception type that carries them.

One place maps a code to its HTTP status; the coordinator turns any
`BadgelineError` into the documented error body.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class ErrorCode(StrEnum):
    VALIDATION_FAILED = "validation_failed"
    MALFORMED_JSON = "malformed_json"
    BODY_TOO_LARGE = "body_too_large"
    UNAUTHORIZED = "unauthorized"
    FORBIDDEN = "forbidden"
    NOT_FOUND = "not_found"
    METHOD_NOT_ALLOWED = "method_not_allowed"
    IDEMPOTENCY_CONFLICT = "idempotency_conflict"
    NOT_CANCELABLE = "not_cancelable"
    START_REFUSED = "start_refused"
    QUEUE_FULL = "queue_full"
    NO_PRINTER_AVAILABLE = "no_printer_available"
    UNSUPPORTED_MEDIA_TYPE = "unsupported_media_type"
    BADGE_REJECTED = "badge_rejected"
    BADGE_CHECK_UNAVAILABLE = "badge_check_unavailable"
    STORE_UNAVAILABLE = "store_unavailable"
    INTERNAL = "internal_error"
    RATE_LIMITED = "rate_limited"
    REQUEST_TIMEOUT = "request_timeout"
    ENROLMENT_CODE_INVALID = "enrolment_code_invalid"
    ENROLMENT_CODE_USED = "enrolment_code_used"
    ENROLMENT_CODE_EXPIRED = "enrolment_code_expired"
    UNKNOWN_PRINTER = "unknown_printer"
    PRINTER_REJECTING = "printer_rejecting"
    NOT_MOVABLE = "not_movable"
    TARGET_UNAVAILABLE = "target_unavailable"
    # GET /v1/events: the Last-Event-ID cannot be resumed from (malformed, never an
    # event of this venue, or older than the stream keeps): nothing is streamed.
    EVENT_ID_GONE = "event_id_gone"


HTTP_STATUS: dict[ErrorCode, int] = {
    ErrorCode.VALIDATION_FAILED: 422,
    ErrorCode.MALFORMED_JSON: 400,
    ErrorCode.BODY_TOO_LARGE: 413,
    ErrorCode.UNAUTHORIZED: 401,
    ErrorCode.FORBIDDEN: 403,
    ErrorCode.NOT_FOUND: 404,
    ErrorCode.METHOD_NOT_ALLOWED: 405,
    ErrorCode.IDEMPOTENCY_CONFLICT: 409,
    ErrorCode.NOT_CANCELABLE: 409,
    ErrorCode.START_REFUSED: 409,
    ErrorCode.QUEUE_FULL: 503,
    ErrorCode.NO_PRINTER_AVAILABLE: 503,
    ErrorCode.UNSUPPORTED_MEDIA_TYPE: 415,
    ErrorCode.BADGE_REJECTED: 422,
    ErrorCode.BADGE_CHECK_UNAVAILABLE: 503,
    ErrorCode.STORE_UNAVAILABLE: 503,
    ErrorCode.INTERNAL: 500,
    ErrorCode.RATE_LIMITED: 429,
    ErrorCode.REQUEST_TIMEOUT: 408,
    ErrorCode.ENROLMENT_CODE_INVALID: 403,
    ErrorCode.ENROLMENT_CODE_USED: 410,
    ErrorCode.ENROLMENT_CODE_EXPIRED: 410,
    ErrorCode.UNKNOWN_PRINTER: 422,
    ErrorCode.PRINTER_REJECTING: 409,
    ErrorCode.NOT_MOVABLE: 409,
    ErrorCode.TARGET_UNAVAILABLE: 409,
    ErrorCode.EVENT_ID_GONE: 410,
}


class BadgelineError(Exception):
    """An error with a stable code, a message for people and optional field errors."""

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        *,
        fields: list[dict[str, Any]] | None = None,
        extra: dict[str, Any] | None = None,
        retry_after_s: int | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.fields = fields or []
        self.extra = extra or {}
        self.retry_after_s = retry_after_s

    @property
    def http_status(self) -> int:
        return HTTP_STATUS[self.code]

    def body(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": str(self.code), "message": self.message}
        error["fields"] = self.fields
        return {"error": error, **self.extra}
