"""The job as a kiosk submits it: one model, the one list of a job's fixed fields.

The coordinator checks it at acceptance, stores it as one JSON field of the job
(`payload`) and hands it to the agent as it was accepted (agent_models.LeasedPrintJob
adds what the lease says). Its rules are strict (no coercion, unknown fields
refused): a malformed job must fail at acceptance, not at the thermal head.
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from badgeline.protocol.ids import (
    ATTENDEE_ID_PATTERN,
    IDEMPOTENCY_KEY_PATTERN,
    PRINTER_TARGET_PATTERN,
)

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


class JobFields(BaseModel):
    """A job's fixed fields, declared once: a submission checks them (PrintJob), every
    view of a job shows them (protocol/models.JobSummary), the agent receives them
    (agent_models.LeasedPrintJob)."""

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
    # Left out of the stored payload and its hash when unset (`payload_json`), so a job
    # without a deadline is stored, deduplicated and leased as before this field.
    expire_after_s: int | None = Field(
        default=None,
        gt=0,
        description="seconds from acceptance: a job no printer has started by then becomes"
        " `expired` and never prints; at most the coordinator's dedupe_window_s; unset, no"
        " deadline",
        examples=[3600],
    )


class PrintJob(JobFields):
    """What a kiosk submits: one badge for one attendee on one target."""

    model_config = ConfigDict(strict=True, extra="forbid", str_strip_whitespace=True)

    def payload_json(self) -> str:
        """The job as it is stored and leased: unset optional fields left out."""
        return self.model_dump_json(exclude_none=True)

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
