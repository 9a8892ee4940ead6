"""Choosing the printer for a job whose target is a pool or `auto`, and where a
job may spill when its printer cannot take it."""

from __future__ import annotations

import json

from badgeline.coordinator.config import CoordinatorSettings
from badgeline.coordinator.store.jobs import Route
from badgeline.protocol.ids import pool_of_target

# A printer whose last heartbeat is older than this many intervals is not a
# candidate for new routed work.
STALE_AFTER_INTERVALS = 3
# How long a kiosk should wait before retrying a shed job: long enough for a
# printer to work down part of its backlog, short enough for a queue at a desk.
SHED_RETRY_AFTER_S = 5


class Router:
    def __init__(self, settings: CoordinatorSettings) -> None:
        self.settings = settings

    def route(self, target: str) -> Route:
        pool = pool_of_target(target)
        if pool is None:
            return Route(target, must_be_reported=not self.settings.names_printer(target))
        if pool in self.settings.pools:
            candidates, label = json.dumps(list(self.settings.pools[pool])), ""
        else:  # `default` (and `auto`) is every printer; another name is a label
            candidates, label = "*", ("" if pool == "default" else pool)
        stale_ms = int(STALE_AFTER_INTERVALS * self.settings.heartbeat_interval_s * 1000)
        return Route("", candidates, label, stale_ms, pool)


def spill_peers(settings: CoordinatorSettings, printer_id: str) -> list[str] | str:
    """Where a job may go when its printer is dead or full: its pool peers when
    pools are configured, else any printer of the venue ('*'), or nowhere."""
    if not printer_id or not settings.spill_named_targets:
        return []  # a routed job went to the least loaded printer already
    for members in settings.pools.values():
        if printer_id in members:
            return [p for p in members if p != printer_id]
    return "*"
