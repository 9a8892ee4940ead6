"""Examples of the main bodies, for the OpenAPI document: what a kiosk sends and
gets, what an agent sends and gets, a page of a list, an error.

Each is built as its model, so an example that no longer fits its schema fails
at import, not in a reader's client.
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

from pydantic import BaseModel

from badgeline.coordinator.api.paging import encode_cursor
from badgeline.protocol import models as m
from badgeline.protocol import pages

_JOB_ID = "job_3f9c2a71b0d4e815"
_SHA256 = "9b74c9897bac770ffc029102a200c5de4c1c4b1bd9f3b1f2a1e5d6c7b8a9f0e1"
_REF = f"artifact://{_SHA256}.pdf"
_SUBMIT = {
    "attendee_id": "att_44817", "badge_pdf_ref": _REF, "printer_target": "printer-a1",
    "priority": 100, "idempotency_key": "desk3-scan-att_44817-88231",
}  # fmt: skip
_AT = 1_784_200_000.25
_JOB: dict[str, Any] = {
    **_SUBMIT, "job_id": _JOB_ID, "state": "printed", "printer_id": "printer-a1",
    "attempts": 0, "possible_duplicate": False, "reprint_of": None, "created_at": _AT,
    "updated_at": _AT + 4.1, "last_error": None, "failure_reason": None,
    "failed_for_good": False, "prints": 1,
}  # fmt: skip
_HISTORY = [
    {"at": _AT, "from": None, "to": "queued", "actor": "kiosk:desk3", "reason": "accepted"},
    {"at": _AT + 0.2, "from": "queued", "to": "leased", "actor": "agent:printer-a1",
     "reason": "leased"},
    {"at": _AT + 0.9, "from": "leased", "to": "printing", "actor": "agent:printer-a1",
     "reason": "start granted"},
    {"at": _AT + 4.1, "from": "printing", "to": "printed", "actor": "agent:printer-a1",
     "reason": "printed"},
]  # fmt: skip
_LEASE = "lease_3f9c2a71b0d4e815-1"
ModelT = TypeVar("ModelT", bound=BaseModel)


def _as(model: type[ModelT], data: Any) -> ModelT:
    """`data` read as the JSON body it stands for (strict models take enums from JSON)."""
    return model.model_validate_json(json.dumps(data))


_MODELS: list[BaseModel] = [
    _as(m.PrintJob, _SUBMIT),
    m.SubmitAccepted(
        job_id=_JOB_ID,
        state=m.JobState.QUEUED,
        printer_id="printer-a1",
        position=2,
        duplicate=False,
        correlation_id="c0ffee12ab34",
    ),
    _as(m.JobView, {**_JOB, "history": _HISTORY}),
    _as(pages.JobPage, {"items": [{**_JOB, "history": _HISTORY}], "next": None}),
    pages.ArtifactStored(ref=_REF, sha256=_SHA256, size=18_422),
    m.CancelResult(job_id=_JOB_ID, state=m.JobState.CANCELED),
    _as(
        m.HeartbeatRequest,
        {
            "agent_id": "pi-hall-a-3",
            "version": "0.1.0",
            "health": {"reachable": True, "jammed": False, "cover_open": False, "paper": "ok"},
            "journal": {"leased": 0, "granted": 1, "printed": 0},
            "labels": ["hall-a"],
        },
    ),
    _as(m.HeartbeatResponse, {"state": "healthy", "paused": False, "heartbeat_interval_s": 1.0}),
    _as(
        m.LeaseResponse,
        {
            "jobs": [
                {
                    "job_id": _JOB_ID,
                    "lease_id": _LEASE,
                    "lease_ttl_s": 30.0,
                    "job": {
                        **_SUBMIT,
                        "attempts": 0,
                        "possible_duplicate": False,
                        "correlation_id": "c0ffee12ab34",
                    },
                }
            ]
        },
    ),
    m.StartRequest(lease_id=_LEASE),
    m.StartResponse(granted=True, fence=1, reason=None),
    _as(m.AckRequest, {"lease_id": _LEASE, "result": "printed", "fence": 1}),
    _as(m.AckResponse, {"job_id": _JOB_ID, "state": "printed", "recorded": True}),
    _as(
        pages.DeadLetterPage,
        {
            "items": [
                {
                    "job_id": _JOB_ID,
                    "reason": "queue printer-a1 full (backpressure)",
                    "printer_id": "printer-a1",
                    "idempotency_key": _SUBMIT["idempotency_key"],
                    "correlation_id": "c0ffee12ab34",
                    "dead_lettered_at": _AT,
                }
            ],
            "next": encode_cursor("dead-letters", [_AT * 1000, _JOB_ID]),
        },
    ),
]

# A request shows what a client sets (defaults left out), an answer all it gets.
EXAMPLES: dict[type[BaseModel], Any] = {
    type(model): model.model_dump(mode="json", by_alias=True,
                                  exclude_unset=isinstance(model, m.StrictModel))
    for model in _MODELS
}  # fmt: skip


def example_of(model: type[BaseModel]) -> Any:
    """The example of this body, or None where there is none."""
    return EXAMPLES.get(model)
