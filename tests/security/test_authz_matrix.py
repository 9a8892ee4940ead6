"""The authorization matrix over EVERY route the app registers, every kind of
caller (a scrape-only metrics token among them), and the caller's own and another
printer's id.

The routes come from `app.router.routes()`, so a new endpoint is in the matrix
the moment it exists: `test_every_route_has_a_declared_policy` fails until its
author says who may call it. A refused call is 401 (no or unknown token) or 403
(wrong role, or an agent token naming another printer), in the error shape, and
writes nothing to Redis; an allowed call is never 401/403 and never a 5xx.
Kiosk limits are switched on so that "writes nothing" covers their buckets too.

The job in the calls is kiosk-1's. A second kiosk may call the kiosk routes but
sees none of kiosk-1's jobs: reading or canceling it is the unknown-job 404 and
writes nothing but that kiosk's own rate bucket; listing its attendee lists nothing.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import pytest
from aiohttp.test_utils import TestClient
from redis.asyncio import Redis

from badgeline.coordinator.api.ratelimit import KIOSK_ROUTES
from badgeline.coordinator.app import create_app
from badgeline.coordinator.config import CoordinatorSettings
from badgeline.coordinator.store.keys import VenueKeys
from badgeline.samples import sample_badge_pdf
from tests.conftest import (
    KIOSK_TOKEN,
    METRICS_TOKEN,
    OPERATOR_TOKEN,
    OTHER_KIOSK_TOKEN,
    agent_token,
    auth,
)
from tests.coordinator import flows
from tests.coordinator.conftest import MakeClient
from tests.coordinator.test_auth import HEARTBEAT
from tests.helpers import job_body
from tests.security import steps

Client = TestClient[Any, Any]
Route = tuple[str, str]

PUBLIC = "public"  # the same answer for every caller, token or not
KIOSK, OPERATOR, AGENT = "kiosk", "operator", "agent"  # AGENT: of the path's printer
METRICS = "metrics"  # a Prometheus server's token: GET /metrics only
OPS = frozenset({OPERATOR})
FRONT = frozenset({KIOSK, OPERATOR})
AGENTS = frozenset({AGENT})
OPEN = frozenset({PUBLIC})

POLICY: dict[Route, frozenset[str]] = {
    ("GET", "/healthz"): OPEN,
    ("GET", "/v1/openapi.json"): OPEN,
    ("POST", "/v1/jobs"): FRONT,
    ("GET", "/v1/jobs/{job_id}"): FRONT,
    ("GET", "/v1/jobs"): FRONT,
    ("POST", "/v1/jobs/{job_id}/cancel"): FRONT,
    ("GET", "/v1/events"): FRONT,
    ("POST", "/v1/agents/{printer_id}/heartbeat"): AGENTS,
    ("POST", "/v1/agents/{printer_id}/lease"): AGENTS,
    ("POST", "/v1/agents/{printer_id}/jobs/{job_id}/start"): AGENTS,
    ("POST", "/v1/agents/{printer_id}/jobs/{job_id}/renew"): AGENTS,
    ("POST", "/v1/agents/{printer_id}/jobs/{job_id}/ack"): AGENTS,
    ("GET", "/v1/dead-letters"): OPS,
    ("POST", "/v1/dead-letters/redrive"): OPS,
    ("GET", "/v1/queues/{printer_id}"): OPS,
    ("PUT", "/v1/artifacts/{name}"): FRONT,
    ("GET", "/v1/artifacts/{name}"): frozenset({KIOSK, OPERATOR, AGENT}),
    ("GET", "/v1/printers"): OPS,
    ("POST", "/v1/printers/{printer_id}/pause"): OPS,
    ("POST", "/v1/printers/{printer_id}/resume"): OPS,
    ("POST", "/v1/printers/{printer_id}/drain"): OPS,
    ("POST", "/v1/printers/{printer_id}/reject"): OPS,
    ("POST", "/v1/printers/{printer_id}/accept"): OPS,
    ("POST", "/v1/queues/{printer_id}/cancel"): OPS,
    ("POST", "/v1/jobs/{job_id}/move"): OPS,
    ("POST", "/v1/rebalance"): OPS,
    ("GET", "/v1/failovers"): OPS,
    ("GET", "/v1/queues"): OPS,
    ("GET", "/v1/alerts"): OPS,
    ("GET", "/v1/alerts/events"): OPS,
    ("GET", "/v1/reconcile"): OPS,
    ("GET", "/v1/stats"): OPS,
    ("POST", "/v1/jobs/{job_id}/reprint"): FRONT,
    ("GET", "/metrics"): frozenset({OPERATOR, METRICS}),
    ("GET", "/"): OPEN,  # the sign-in page
    ("GET", "/dashboard/static/{name}"): OPEN,
    ("POST", "/dashboard/login"): OPEN,  # takes the token from a form, not a header
    ("POST", "/dashboard/logout"): OPEN,
    ("GET", "/dashboard/session"): OPEN,  # answers a session cookie only
    ("GET", "/dashboard/snapshot"): OPS,
    ("GET", "/dashboard/stream"): OPS,
    ("POST", "/v1/enrolment-codes"): OPS,
    ("POST", "/v1/enrol"): OPEN,  # the code is the credential
}

# A real badge: the artifact store accepts only PDFs that pass the badge checks.
PDF = sample_badge_pdf("A-MATRIX")
PDF_NAME = hashlib.sha256(PDF).hexdigest() + ".pdf"
# The routes that name one job (or list an attendee's) to a kiosk: another kiosk's
# job is hidden there, never refused.
JOB_ROUTES = frozenset({("GET", "/v1/jobs/{job_id}"), ("POST", "/v1/jobs/{job_id}/cancel")})
# A reprint of kiosk-1's job is hidden from another kiosk as well; kiosk-1's own is
# refused 422 here (the matrix's job is leased, not yet printed), past authorization.
HIDDEN_ROUTES = JOB_ROUTES | {("POST", "/v1/jobs/{job_id}/reprint")}
LIST_ROUTE = ("GET", "/v1/jobs")


def _registered_routes() -> list[Route]:
    # Building the app opens no connection: the routes are known without a server.
    app = create_app(CoordinatorSettings(mdns=False), Redis())
    return sorted({(r.method, r.resource.canonical) for r in app.router.routes()
                   if r.method != "HEAD" and r.resource is not None})  # fmt: skip


ROUTES = _registered_routes()
CASES = [
    (route, printer)
    for route in ROUTES
    for printer in (("printer-a", "printer-b") if "{printer_id}" in route[1] else ("",))
]


@dataclass(frozen=True)
class Caller:
    name: str
    role: str | None  # None: no token, or one nobody was given
    printer_id: str | None = None
    kiosk_name: str | None = None  # a kiosk's token name, for its rate bucket


OTHER_KIOSK = "another kiosk"
CALLERS = (
    Caller("no token", None), Caller("unknown token", None),
    Caller("kiosk", KIOSK, kiosk_name="kiosk-1"), Caller("operator", OPERATOR),
    Caller("agent of printer-a", AGENT, "printer-a"),
    Caller("agent of printer-b", AGENT, "printer-b"),
    Caller("enrolled agent of printer-a", AGENT, "printer-a"),
    Caller(OTHER_KIOSK, KIOSK, kiosk_name="kiosk-2"), Caller("metrics", METRICS),
)  # fmt: skip


def _allowed(caller: Caller, policy: frozenset[str], path_printer: str) -> bool:
    if PUBLIC in policy:
        return True
    if caller.role is None or caller.role not in policy:
        return False
    return caller.role != AGENT or not path_printer or caller.printer_id == path_printer


@dataclass
class World:
    """What the calls need: kiosk-1's job leased by printer-a, an artifact, the callers'
    headers."""

    job_id: str
    attendee_id: str
    lease_id: str
    headers: dict[str, dict[str, str]]


async def _world(client: Client) -> World:
    await flows.expect(await client.put(f"/v1/artifacts/{PDF_NAME}", data=PDF,
                                        headers=flows.OPERATOR), 201)  # fmt: skip
    job = job_body()
    submitted = await client.post("/v1/jobs", json=job, headers=flows.KIOSK)
    job_id = (await flows.expect(submitted, 201))["job_id"]
    leased = await flows.lease_one(client)
    enrolled = await steps.enrolled_token(client, "printer-a", "pi-matrix")
    headers = {
        "no token": {}, "unknown token": auth("not-a-token-anyone-was-given"),
        "kiosk": auth(KIOSK_TOKEN), "operator": auth(OPERATOR_TOKEN),
        "agent of printer-a": auth(agent_token("printer-a")),
        "agent of printer-b": auth(agent_token("printer-b")),
        "enrolled agent of printer-a": auth(enrolled), OTHER_KIOSK: auth(OTHER_KIOSK_TOKEN),
        "metrics": auth(METRICS_TOKEN),
    }  # fmt: skip
    return World(job_id, job["attendee_id"], leased["lease_id"], headers)


def _body(route: Route, world: World) -> dict[str, Any]:
    """Keyword arguments for the request: a plausible body where the route reads one."""
    bodies: dict[Route, Any] = {
        ("POST", "/v1/jobs"): job_body(),
        ("POST", "/v1/agents/{printer_id}/heartbeat"): HEARTBEAT,
        ("POST", "/v1/agents/{printer_id}/jobs/{job_id}/start"): {"lease_id": world.lease_id},
        ("POST", "/v1/agents/{printer_id}/jobs/{job_id}/renew"): {"lease_id": world.lease_id},
        ("POST", "/v1/agents/{printer_id}/jobs/{job_id}/ack"): {"lease_id": world.lease_id,
                                                              "result": "printed"},
        ("POST", "/v1/dead-letters/redrive"): {"ids": []},
        ("POST", "/v1/jobs/{job_id}/reprint"): {"reason": "matrix"},
        ("POST", "/v1/jobs/{job_id}/move"): {"printer_target": "printer-b"},
        ("POST", "/v1/printers/{printer_id}/reject"): {"reason": "matrix"},
        ("POST", "/v1/enrolment-codes"): {"printer_id": "printer-a"},
        ("POST", "/v1/enrol"): {"code": "A" * 24, "printer_id": "printer-a", "agent_id": "pi"},
    }  # fmt: skip
    if route == ("PUT", "/v1/artifacts/{name}"):
        return {"data": PDF, "headers": {"Content-Type": "application/pdf"}}
    if route in bodies:
        return {"json": bodies[route]}
    return {"json": {}} if route[0] == "POST" else {}


def _path(route: Route, world: World, printer: str) -> str:
    name = "dashboard.js" if route[1].startswith("/dashboard/static/") else PDF_NAME
    query = f"?attendee_id={world.attendee_id}" if route == LIST_ROUTE else ""
    return (route[1].replace("{job_id}", world.job_id).replace("{printer_id}", printer)
            .replace("{name}", name)) + query  # fmt: skip


async def _call(client: Client, route: Route, world: World, printer: str, caller: Caller) -> Any:
    kwargs = _body(route, world)
    headers = {**kwargs.pop("headers", {}), **world.headers[caller.name]}
    response = await client.request(route[0], _path(route, world, printer), headers=headers,
                                    **kwargs)  # fmt: skip
    status = response.status
    json_reply = response.content_type == "application/json"
    body = await response.json() if json_reply and (status >= 400 or route == LIST_ROUTE) else None
    response.close()  # the dashboard's event stream never ends by itself
    return status, body


def _without_bucket(snapshot: dict[str, Any], venue: str, caller: Caller) -> dict[str, Any]:
    """A snapshot less the caller's own rate bucket and quota, which any kiosk call spends."""
    keys = VenueKeys(venue)
    own = {keys.rate_bucket(caller.kiosk_name or ""), keys.rate_quota(caller.kiosk_name or "")}
    return {key: value for key, value in snapshot.items() if key not in own}


async def _check_hidden(
    client: Client, redis: Redis, venue: str, route: Route, world: World, caller: Caller
) -> None:
    """Another kiosk calling a route about kiosk-1's job: it is as if there were none."""
    before = _without_bucket(await flows.venue_snapshot(redis, venue), venue, caller)
    status, body = await _call(client, route, world, "", caller)
    if route == LIST_ROUTE:
        assert (status, body) == (200, {"items": [], "next": None}), (caller.name, status, body)
    else:
        assert status == 404, (caller.name, status, body)
        flows.assert_error_shape(body, "not_found")
        assert body["error"]["message"] == f"no job {world.job_id}", body
    assert _without_bucket(await flows.venue_snapshot(redis, venue), venue, caller) == before


CASE_IDS = [f"{method} {path} {printer}".strip() for (method, path), printer in CASES]


@pytest.mark.parametrize(("route", "printer"), CASES, ids=CASE_IDS)
async def test_authz_matrix(
    make_client: MakeClient, redis: Redis, settings: CoordinatorSettings,
    route: Route, printer: str,
) -> None:  # fmt: skip
    policy = POLICY.get(route)
    assert policy is not None, f"declare who may call {route} in POLICY"
    # GIVEN a coordinator with kiosk limits on, a leased job, an artifact and an enrolled agent
    # (and attempts enough at the guessed routes for every caller to reach the handler)
    client = await make_client(kiosk_rate_per_s=1000, kiosk_burst=1000, kiosk_daily_quota=1000,
                               credential_attempts_burst=1000)  # fmt: skip
    world = await _world(client)
    refused = [c for c in CALLERS if not _allowed(c, policy, printer)]
    allowed = [c for c in CALLERS if _allowed(c, policy, printer)]
    # WHEN each refused caller calls it, THEN 401/403 in the error shape, and nothing written
    for caller in refused:
        before = await flows.venue_snapshot(redis, settings.venue)
        status, body = await _call(client, route, world, printer, caller)
        expected = 401 if caller.role is None else 403
        assert status == expected, (caller.name, status, body)
        flows.assert_error_shape(body, "unauthorized" if expected == 401 else "forbidden")
        assert await flows.venue_snapshot(redis, settings.venue) == before, caller.name
    # AND another kiosk finds no job of kiosk-1's where it names or lists one
    hides = route in HIDDEN_ROUTES or route == LIST_ROUTE
    for caller in allowed:
        if caller.name == OTHER_KIOSK and hides:
            await _check_hidden(client, redis, settings.venue, route, world, caller)
    # AND each allowed caller gets past authorization (public routes: the same for everyone)
    statuses = {}
    for caller in allowed:
        if caller.name == OTHER_KIOSK and hides:
            continue
        status, body = await _call(client, route, world, printer, caller)
        assert status < 500, (caller.name, status, body)
        if PUBLIC not in policy:
            assert status not in (401, 403), (caller.name, status, body)
        if route in JOB_ROUTES or route == LIST_ROUTE:  # kiosk-1 and operators find it
            assert status == 200, (caller.name, status, body)
        if route == LIST_ROUTE:
            assert [job["job_id"] for job in body["items"]] == [world.job_id], (caller.name, body)
        statuses[caller.name] = status
    if PUBLIC in policy:
        assert len(set(statuses.values())) == 1, statuses


def test_every_route_has_a_declared_policy() -> None:
    undeclared = [route for route in ROUTES if route not in POLICY]
    assert not undeclared, f"new routes need an entry in POLICY: {undeclared}"
    gone = set(POLICY) - set(ROUTES)
    assert not gone, f"POLICY names routes that are gone: {gone}"


def test_every_kiosk_route_is_rate_limited() -> None:
    kiosk_routes = {route for route, policy in POLICY.items() if KIOSK in policy}
    assert kiosk_routes == KIOSK_ROUTES


def test_the_metrics_role_reads_metrics_and_nothing_else() -> None:
    # The matrix above calls every route with the metrics token; this says what it found.
    allowed = sorted(route for route, policy in POLICY.items()
                     if METRICS in policy or PUBLIC in policy)  # fmt: skip
    assert [route for route in allowed if POLICY[route] != OPEN] == [("GET", "/metrics")]
