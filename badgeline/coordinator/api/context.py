"""What every request handler can reach: settings, store, auth, wake-ups."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from aiohttp import web

from badgeline.coordinator.api.auth import Identity, TokenAuthority
from badgeline.coordinator.config import CoordinatorSettings, Role
from badgeline.coordinator.control.audit_export import AuditExport
from badgeline.coordinator.control.badge_checks import BadgeChecker
from badgeline.coordinator.control.event_hub import EventHub
from badgeline.coordinator.control.failover import FailoverController
from badgeline.coordinator.control.routing import Router
from badgeline.coordinator.control.wakeups import WakeHub
from badgeline.coordinator.store import Store
from badgeline.discovery.agents import AgentBrowser


@dataclass
class Coordinator:
    settings: CoordinatorSettings
    store: Store
    auth: TokenAuthority
    wakeups: WakeHub
    router: Router
    failover: FailoverController
    badge_checker: BadgeChecker
    audit_export: AuditExport  # where jobs that left Redis are read from (GET /v1/jobs/{id})
    event_hub: EventHub  # this process's reader of the venue's job events (GET /v1/events)
    agent_browser: AgentBrowser | None = None
    # Set by a heartbeat that changed a printer's state, so the monitor acts now
    # instead of at its next tick.
    monitor_wakeup: asyncio.Event = field(default_factory=asyncio.Event)


COORDINATOR = web.AppKey("coordinator", Coordinator)
# Set by the dashboard's session middleware once a session cookie (and, on a
# write, its CSRF header) checked out; never set when a Bearer header is sent.
SESSION_IDENTITY = web.RequestKey("session_identity", Identity)
# Set by enrolment.token_middleware: the caller its Bearer token names, a configured
# token or an agent token issued by enrolment (held in Redis, as a digest).
TOKEN_IDENTITY = web.RequestKey("token_identity", Identity)


def coordinator_of(request: web.Request) -> Coordinator:
    return request.app[COORDINATOR]


def authenticate(request: web.Request, *roles: Role) -> tuple[Coordinator, Identity]:
    from badgeline.coordinator.api.auth import require_role

    coordinator = coordinator_of(request)
    identity = (
        request.get(SESSION_IDENTITY)
        or request.get(TOKEN_IDENTITY)
        or coordinator.auth.identify(request.headers.get("Authorization"))
    )
    if roles:
        require_role(identity, *roles)
    return coordinator, identity
