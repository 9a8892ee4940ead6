"""OpenAPI links: which answer feeds which next call.

A client reads them as "the `job_id` this submit returns is the one to poll,
cancel or reprint"; stateful fuzzers (schemathesis' state machine) follow them
to chain calls, so that a case reaches a job that exists, a lease that is live,
a start that was granted: states a single call with made-up ids never reaches.

Keyed by the source (method, path) and status; each link names its target by
`operationRef` (a JSON pointer into `paths`), and says where each of the
target's parameters (and body fields) comes from, in OpenAPI's runtime
expressions (`$response.body#/job_id`, `$request.path.printer_id`).
"""

from __future__ import annotations

from typing import Any, Final

Link = dict[str, Any]
Route = tuple[str, str]


def ref(method: str, path: str) -> str:
    """The JSON pointer of an operation (`/` in a path is `~1` in a pointer)."""
    return "#/paths/" + path.replace("~", "~0").replace("/", "~1") + "/" + method


def _link(method: str, path: str, parameters: dict[str, str] | None = None,
          body: Any = None) -> Link:  # fmt: skip
    link: Link = {"operationRef": ref(method, path)}
    if parameters:
        link["parameters"] = parameters
    if body is not None:
        link["requestBody"] = body
    return link


JOB = "/v1/jobs/{job_id}"
LEASE = "/v1/agents/{printer_id}/lease"
START = "/v1/agents/{printer_id}/jobs/{job_id}/start"
ACK = "/v1/agents/{printer_id}/jobs/{job_id}/ack"
SAME_PRINTER = "$request.path.printer_id"


def _job_links(job_id: str) -> dict[str, Link]:
    """Read, cancel or reprint the job whose id is at `job_id` (a runtime expression)."""
    return {
        "GetJob": _link("get", JOB, {"job_id": job_id}),
        "CancelJob": _link("post", JOB + "/cancel", {"job_id": job_id}),
        "ReprintJob": _link("post", JOB + "/reprint", {"job_id": job_id}),
    }


_SUBMITTED = {
    **_job_links("$response.body#/job_id"),
    "ListAttendeeJobs": _link("get", "/v1/jobs", {"attendee_id": "$request.body#/attendee_id"}),
    # The same submission again: the dedupe gate answers the first job (200).
    "SubmitAgain": _link("post", "/v1/jobs", body="$request.body"),
    "LeaseFromItsPrinter": _link("post", LEASE, {"printer_id": "$response.body#/printer_id"}),
    "PeekItsQueue": _link("get", "/v1/queues/{printer_id}",
                          {"printer_id": "$response.body#/printer_id"}),
    # An operator moving it to another printer before it starts.
    "MoveJob": _link("post", JOB + "/move", {"job_id": "$response.body#/job_id"}),
}  # fmt: skip

_REPRINTED = {
    **_job_links("$response.body#/job_id"),
    "GetOriginal": _link("get", JOB, {"job_id": "$response.body#/reprint_of"}),
}
_LEASED = "$response.body#/jobs/0"
_START_GRANTED = {"lease_id": "$request.body#/lease_id", "fence": "$response.body#/fence"}

LINKS: Final[dict[Route, dict[int, dict[str, Link]]]] = {
    ("post", "/v1/jobs"): {201: _SUBMITTED, 200: _SUBMITTED},
    ("get", "/v1/jobs"): {200: _job_links("$response.body#/items/0/job_id")},
    ("get", JOB): {200: _job_links("$request.path.job_id")},
    ("post", JOB + "/cancel"): {200: _job_links("$response.body#/job_id")},
    ("post", JOB + "/reprint"): {201: _REPRINTED, 200: _REPRINTED},
    ("post", JOB + "/move"): {200: _job_links("$response.body#/job_id")},
    # An agent's lease → start → ack, under the lease it was given.
    ("post", LEASE): {200: {
        "StartLeasedJob": _link("post", START,
                                {"printer_id": SAME_PRINTER, "job_id": _LEASED + "/job_id"},
                                {"lease_id": _LEASED + "/lease_id"}),
        "AckLeasedJob": _link("post", ACK,
                              {"printer_id": SAME_PRINTER, "job_id": _LEASED + "/job_id"},
                              {"lease_id": _LEASED + "/lease_id"}),
        "GetLeasedJob": _link("get", JOB, {"job_id": _LEASED + "/job_id"}),
    }},
    ("post", START): {200: {
        "AckStartedJob": _link("post", ACK, {"printer_id": SAME_PRINTER,
                                             "job_id": "$request.path.job_id"}, _START_GRANTED),
        # A retried start under the same lease (an agent that lost the answer).
        "StartAgain": _link("post", START, {"printer_id": SAME_PRINTER,
                                            "job_id": "$request.path.job_id"}, "$request.body"),
        "CancelStartedJob": _link("post", JOB + "/cancel", {"job_id": "$request.path.job_id"}),
    }},
    ("post", ACK): {200: {
        # A retried ack: recorded once, answered `recorded: false` after.
        "AckAgain": _link("post", ACK, {"printer_id": SAME_PRINTER,
                                        "job_id": "$request.path.job_id"}, "$request.body"),
        **_job_links("$response.body#/job_id"),
    }},
    # An operator's enrolment code, exchanged by an agent.
    ("post", "/v1/enrolment-codes"): {201: {
        "EnrolWithCode": _link("post", "/v1/enrol", body={
            "code": "$response.body#/code", "printer_id": "$response.body#/printer_id"}),
    }},
    ("post", "/v1/enrol"): {201: {
        "EnrolAgain": _link("post", "/v1/enrol", body="$request.body"),  # single use: 410
    }},
    # A paused printer: resumed, drained, its queue peeked.
    ("post", "/v1/printers/{printer_id}/pause"): {200: {
        "Resume": _link("post", "/v1/printers/{printer_id}/resume", {"printer_id": SAME_PRINTER}),
        "Drain": _link("post", "/v1/printers/{printer_id}/drain", {"printer_id": SAME_PRINTER}),
        "LeaseWhilePaused": _link("post", LEASE, {"printer_id": SAME_PRINTER}),
        "Reject": _link("post", "/v1/printers/{printer_id}/reject", {"printer_id": SAME_PRINTER}),
    }},
    ("post", "/v1/printers/{printer_id}/reject"): {200: {
        "Accept": _link("post", "/v1/printers/{printer_id}/accept", {"printer_id": SAME_PRINTER}),
        "CancelItsQueue": _link("post", "/v1/queues/{printer_id}/cancel",
                                {"printer_id": SAME_PRINTER}),
    }},
    ("get", "/v1/dead-letters"): {200: {
        "GetDeadJob": _link("get", JOB, {"job_id": "$response.body#/items/0/job_id"}),
        "RedriveDeadJob": _link("post", "/v1/dead-letters/redrive",
                                body={"ids": ["$response.body#/items/0/job_id"]}),
    }},
}  # fmt: skip


def links_for(method: str, path: str, status: int, routes: set[Route]) -> dict[str, Link]:
    """The links out of this answer whose target the app registers."""
    found = LINKS.get((method, path), {}).get(status, {})
    return {name: link for name, link in found.items() if _target(link) in routes}


def _target(link: Link) -> Route:
    pointer = link["operationRef"].removeprefix("#/paths/")
    path, _, method = pointer.rpartition("/")
    return method, path.replace("~1", "/").replace("~0", "~")
