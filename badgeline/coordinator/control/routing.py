"""Choosing the printer for a job whose target is a pool or `auto`."""

from __future__ import annotations

import json
from dataclasses import dataclass

from badgeline.coordinator.config import CoordinatorSettings
from badgeline.protocol.errors import BadgelineError, ErrorCode
from badgeline.protocol.ids import pool_of_target

# A printer whose last heartbeat is older than this many intervals is not a
# candidate for new routed work.
STALE_AFTER_INTERVALS = 3


@dataclass(frozen=True)
class Route:
    """Where a job goes: its named printer, or a choice among candidates that the
    accept script makes in the same step as the enqueue (scripts/accept-7.lua)."""

    printer_id: str  # '' when the script chooses
    candidates: str = ""  # a JSON list or '*' (every printer of the venue); '' when named
    label: str = ""  # the label a candidate must carry ('' for any)
    stale_ms: int = 0  # heartbeat age past which a printer takes no new routed work
    pool: str | None = None

    def script_args(self) -> list[str | int]:
        return [self.candidates, self.label, self.stale_ms]


class Router:
    def __init__(self, settings: CoordinatorSettings) -> None:
        self.settings = settings

    def route(self, target: str) -> Route:
        pool = pool_of_target(target)
        if pool is None:
            return Route(printer_id=target)
        if pool in self.settings.pools:
            candidates, label = json.dumps(list(self.settings.pools[pool])), ""
        else:  # `default` (and `auto`) is every printer; another name is a label
            candidates, label = "*", ("" if pool == "default" else pool)
        stale_ms = int(STALE_AFTER_INTERVALS * self.settings.heartbeat_interval_s * 1000)
        return Route("", candidates, label, stale_ms, pool)


def no_printer_available(route: Route) -> BadgelineError:
    return BadgelineError(
        ErrorCode.NO_PRINTER_AVAILABLE,
        f"no healthy printer in pool {route.pool!r} right now; retry or name a printer",
        extra={"pool": route.pool},
    )
