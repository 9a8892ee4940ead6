"""Builds the coordinator's aiohttp application."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

from aiohttp import web

from badgeline.coordinator.api import (
    agent,
    artifacts,
    attempts,
    dashboard,
    enrolment,
    events,
    kiosk,
    metrics,
    ops,
    printers,
    ratelimit,
    reports,
    reprint,
)
from badgeline.coordinator.api.auth import TokenAuthority
from badgeline.coordinator.api.context import COORDINATOR, Coordinator
from badgeline.coordinator.api.http import correlation_middleware, error_middleware, json_response
from badgeline.coordinator.api.observations import METRICS, observe_requests
from badgeline.coordinator.api.openapi import build_openapi, registered_routes
from badgeline.coordinator.config import CoordinatorSettings
from badgeline.coordinator.control.audit_export import AuditExport
from badgeline.coordinator.control.badge_checks import BadgeChecker
from badgeline.coordinator.control.event_hub import EVENT_TRIM_INTERVAL_S, EventHub
from badgeline.coordinator.control.expiry import expire_due_once
from badgeline.coordinator.control.failover import FailoverController
from badgeline.coordinator.control.lease_scanner import (
    LEASED_REPAIR_INTERVAL_S,
    expire_leases_once,
    repair_leased_sets_once,
)
from badgeline.coordinator.control.retention import RetentionSweeper
from badgeline.coordinator.control.routing import Router
from badgeline.coordinator.control.upkeep import UpkeepLoop
from badgeline.coordinator.control.wakeups import WakeHub
from badgeline.coordinator.control.webhooks import Webhooks
from badgeline.coordinator.store import Store
from badgeline.coordinator.store.connection import RedisClient
from badgeline.discovery.agents import AgentBrowser
from badgeline.log import log_event

UPKEEP_LOOPS = web.AppKey("upkeep_loops", list[UpkeepLoop])
WEBHOOKS = web.AppKey("webhooks", Webhooks)


async def healthz(request: web.Request) -> web.Response:
    coordinator = request.app[COORDINATOR]
    try:
        await coordinator.store.ping()
    except Exception as error:  # the probe reports; it never fails the request
        return json_response({"ok": False, "redis": str(error)}, status=503)
    return json_response({"ok": True, "venue": coordinator.settings.venue})


async def openapi(request: web.Request) -> web.Response:
    return json_response(build_openapi(registered_routes(request.app)))


def create_app(settings: CoordinatorSettings, redis: RedisClient) -> web.Application:
    app = web.Application(
        middlewares=[correlation_middleware, observe_requests, error_middleware],
        client_max_size=settings.max_body_bytes,
    )
    store = Store(redis, settings)
    app[COORDINATOR] = Coordinator(
        settings=settings,
        store=store,
        auth=TokenAuthority(settings.tokens),
        wakeups=WakeHub(store.wake_channel),
        router=Router(settings),
        failover=FailoverController(store, settings),
        badge_checker=BadgeChecker(settings.artifact_max_bytes),
        audit_export=AuditExport(settings.audit_directory, settings.audit_file_max_bytes),
        event_hub=EventHub(store.events),
    )
    app[WEBHOOKS] = Webhooks(store.events, settings)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/v1/openapi.json", openapi)
    app.add_routes(kiosk.routes)
    app.add_routes(agent.routes)
    app.add_routes(ops.routes)
    app.add_routes(artifacts.routes)
    app.add_routes(printers.routes)
    app.add_routes(reports.routes)
    app.add_routes(reprint.routes)
    events.install(app)
    metrics.install(app)
    dashboard.setup(app)
    enrolment.install(app)  # after the dashboard's session middleware: a cookie wins
    ratelimit.install(app)  # after enrolment's: limits need the caller
    attempts.install(app)  # the routes where secrets are guessed, per client address
    app.on_shutdown.append(_end_long_polls)
    app.cleanup_ctx.append(_background)
    return app


async def _end_long_polls(app: web.Application) -> None:
    # Runs before aiohttp waits for open requests: a parked lease long-poll
    # would otherwise hold a SIGTERM for up to its whole `wait`.
    app[COORDINATOR].wakeups.end_waits()
    app[COORDINATOR].event_hub.end_streams()  # event streams never end by themselves


async def _background(app: web.Application) -> AsyncIterator[None]:
    coordinator = app[COORDINATOR]
    settings = coordinator.settings
    # Before any request or loop: what a previous release wrote is read as this one writes.
    await coordinator.store.data_format.upgrade()
    await coordinator.wakeups.start()
    await coordinator.event_hub.start()
    if settings.mdns:
        browser = AgentBrowser(interfaces=settings.mdns_interface_list())
        try:
            await browser.start()
            coordinator.agent_browser = browser
        except OSError as error:  # e.g. mdns_interfaces names an address this host lacks
            # Agent addresses are a convenience of GET /v1/printers: serve without them.
            log_event("mdns_failed", logging.ERROR, venue=settings.venue,
                      interfaces=settings.mdns_interface_list(), error=str(error))  # fmt: skip
    loops = [
        UpkeepLoop("lease_scanner", lambda: expire_leases_once(coordinator.store),
                   settings.lease_scan_interval_s),
        UpkeepLoop("leased_repair", lambda: repair_leased_sets_once(coordinator.store),
                   LEASED_REPAIR_INTERVAL_S),
        UpkeepLoop("failover_monitor", coordinator.failover.tick, settings.monitor_interval_s,
                   coordinator.monitor_wakeup),
        UpkeepLoop("retention", RetentionSweeper(coordinator.store,
                                                 coordinator.audit_export).sweep_once,
                   settings.retention_sweep_interval_s),
        UpkeepLoop("expiry", lambda: expire_due_once(coordinator.store),
                   settings.expiry_sweep_interval_s),
        UpkeepLoop("event_trim",
                   lambda: coordinator.store.events.trim(settings.event_retention_s),
                   EVENT_TRIM_INTERVAL_S),
    ]  # fmt: skip
    for loop in loops:
        loop.start()
    app[UPKEEP_LOOPS] = loops
    await app[WEBHOOKS].start()
    app[METRICS].loop_lag.start()
    yield
    await app[METRICS].loop_lag.stop()
    await app[WEBHOOKS].stop()
    for loop in loops:
        await loop.stop()
    await coordinator.event_hub.stop()
    await coordinator.wakeups.stop()
    if coordinator.agent_browser is not None:
        await coordinator.agent_browser.stop()
    await coordinator.badge_checker.close()
