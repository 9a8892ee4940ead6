"""Choosing the printer for a job whose target is a pool or `auto`."""

from __future__ import annotations

import json
from typing import Any

from badgeline.coordinator.config import CoordinatorSettings
from badgeline.coordinator.keys import VenueKeys
from badgeline.coordinator.redis_client import RedisClient
from badgeline.coordinator.script_loader import LoadedScript
from badgeline.protocol.errors import BadgelineError, ErrorCode
from badgeline.protocol.ids import pool_of_target

# A printer whose last heartbeat is older than this many intervals is not a
# candidate for new routed work.
STALE_AFTER_INTERVALS = 3


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class Router:
    def __init__(
        self, redis: RedisClient, settings: CoordinatorSettings,
        scripts: dict[str, LoadedScript],
    ) -> None:  # fmt: skip
        self.redis = redis
        self.settings = settings
        self.keys = VenueKeys(settings.venue)
        self.scripts = scripts

    async def printer_for(self, target: str) -> str:
        pool = pool_of_target(target)
        if pool is None:
            return target
        if pool in self.settings.pools:
            candidates, label = json.dumps(list(self.settings.pools[pool])), ""
        else:  # `default` (and `auto`) is every printer; another name is a label
            candidates, label = "*", ("" if pool == "default" else pool)
        stale_ms = int(STALE_AFTER_INTERVALS * self.settings.heartbeat_interval_s * 1000)
        chosen = await self.scripts["route"](
            [self.keys.printers], [self.keys.prefix, candidates, label, stale_ms]
        )
        if not chosen:
            raise BadgelineError(
                ErrorCode.NO_PRINTER_AVAILABLE,
                f"no healthy printer in pool {pool!r} right now; retry or name a printer",
                extra={"pool": pool},
            )
        return _text(chosen)
