"""Choosing the printer for a job whose target is a pool or `auto`."""

from __future__ import annotations

import json
from typing import Any

from badgeline.coordinator.config import CoordinatorSettings
from badgeline.coordinator.keys import VenueKeys
from badgeline.coordinator.redis_client import RedisClient
from badgeline.protocol.errors import BadgelineError, ErrorCode
from badgeline.protocol.ids import pool_of_target
from badgeline.protocol.states import PrinterState

# A printer whose last heartbeat is older than this many intervals is not a
# candidate for new routed work.
STALE_AFTER_INTERVALS = 3


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class Router:
    def __init__(self, redis: RedisClient, settings: CoordinatorSettings) -> None:
        self.redis = redis
        self.settings = settings
        self.keys = VenueKeys(settings.venue)

    async def printer_for(self, target: str) -> str:
        pool = pool_of_target(target)
        if pool is None:
            return target
        candidates = await self._pool_members(pool)
        chosen = await self._least_loaded_healthy(candidates)
        if chosen is None:
            raise BadgelineError(
                ErrorCode.NO_PRINTER_AVAILABLE,
                f"no healthy printer in pool {pool!r} right now; retry or name a printer",
                extra={"pool": pool},
            )
        return chosen

    async def _pool_members(self, pool: str) -> list[str]:
        if pool in self.settings.pools:
            return list(self.settings.pools[pool])
        known = sorted(_text(p) for p in await self.redis.smembers(self.keys.printers))
        if pool == "default":
            return known
        members = []
        for printer_id in known:
            labels = await self.redis.hget(self.keys.printer(printer_id), "labels")
            if labels and pool in json.loads(_text(labels)):
                members.append(printer_id)
        return members

    async def _least_loaded_healthy(self, printer_ids: list[str]) -> str | None:
        now_s, now_us = await self.redis.time()
        now_ms = now_s * 1000 + now_us // 1000
        stale_ms = STALE_AFTER_INTERVALS * self.settings.heartbeat_interval_s * 1000
        best: tuple[int, str] | None = None
        for printer_id in printer_ids:
            fields = await self.redis.hmget(
                self.keys.printer(printer_id), ["state", "last_heartbeat_ms", "paused_until_ms"]
            )
            if fields[0] is None or fields[1] is None:
                continue
            if now_ms - int(fields[1]) > stale_ms or int(fields[2] or 0) > now_ms:
                continue
            # Degraded printers keep their queue but take no new routed work.
            if _text(fields[0]) != PrinterState.HEALTHY:
                continue
            depth = await self.redis.zcard(self.keys.queue(printer_id))
            if best is None or depth < best[0]:
                best = (depth, printer_id)
        return best[1] if best else None
