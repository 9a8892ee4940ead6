"""What one dashboard push holds: the operator routes' JSON, the printers in order
of trouble with their trends, and the slow sections every open page shares.

The stream (dashboard.py) sends this whole picture every second, so a page that
reconnects needs no replay.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

from aiohttp import web

from badgeline.coordinator.api.context import COORDINATOR, Coordinator, coordinator_of
from badgeline.coordinator.control.routing import STALE_AFTER_INTERVALS
from badgeline.coordinator.control.trend import FleetTrend, TrendShape
from badgeline.coordinator.control.triage import triage
from badgeline.coordinator.control.upkeep import UpkeepLoop
from badgeline.protocol.errors import BadgelineError

# Dead letters and the other engineers' reports cost one Redis call per job:
# refresh them every few seconds, or at once when the dead-letter count moves.
SLOW_SECTIONS_EVERY_S = 5.0
LIST_LIMIT = 100
# Each a route's first page (dead letters: the oldest LIST_LIMIT), except the hours,
# read whole: the chart shows the last twelve, which are on the last page.
SLOW_SECTIONS = {
    "dead_letters": f"/v1/dead-letters?limit={LIST_LIMIT}",
    "reconcile": "/v1/reconcile",
    "stats": "/v1/stats",
    "alerts": "/v1/alerts",
}
WHOLE_SECTIONS = {"stats_by_hour": "/v1/stats?by=hour&limit=500"}  # fmt: skip
# Pages of one list a snapshot reads at most (printers: 500 a page).
MAX_PAGES = 20
RECENT_FAILOVERS = 10
# Sampled while the coordinator runs, whether or not a page is open, so that a
# page opened at peak shows the last minutes at once.
TREND_SHAPE = TrendShape()


async def route_json(request: web.Request, path: str) -> Any:
    """Answer `GET path` with the app's own handler, as the caller: the same
    JSON and the same auth checks as the operator route, without a socket."""
    sub = request.clone(method="GET", rel_url=path)
    match = await request.app.router.resolve(sub)
    if match.http_exception is not None:
        return {"unavailable": f"{path} answers {match.http_exception.status} here"}
    try:
        response = await match.handler(sub)
    except BadgelineError as error:
        return {"unavailable": f"{path}: {error.code}: {error}"}
    if not isinstance(response, web.Response) or response.status >= 400 or not response.text:
        return {"unavailable": f"{path} answered {response.status}"}
    return json.loads(response.text)


async def route_all(request: web.Request, path: str) -> Any:
    """`route_json` of a list and of the pages after it (MAX_PAGES at most): the
    first page's answer holding every page's items."""
    first = await route_json(request, path)
    if not isinstance(first.get("items"), list):
        return first  # unavailable
    answer, pages = first, 1
    while answer.get("next") and pages < MAX_PAGES:
        joiner = "&" if "?" in path else "?"
        answer = await route_json(request, f"{path}{joiner}after={quote(answer['next'])}")
        if not isinstance(answer.get("items"), list):
            break
        first["items"] += answer["items"]
        pages += 1
    first["next"] = answer.get("next")
    return first


async def parked_jobs(coordinator: Coordinator) -> dict[str, Any]:
    count, ids = await coordinator.store.jobs.parked(LIST_LIMIT)
    views = [v for j in ids if (v := await coordinator.store.jobs.get(j)) is not None]
    return {"count": count,
            "jobs": [v.model_dump(mode="json", by_alias=True, exclude={"history"})
                     for v in views]}  # fmt: skip


class SlowSections:
    """The slow sections (dead letters, reconciliation, statistics, alerts), shared
    by every open dashboard of this process: ten operators watching cost one
    reconciliation every few seconds, not ten."""

    def __init__(self) -> None:
        self.sections: dict[str, Any] = {}
        self.read_at = -SLOW_SECTIONS_EVERY_S
        self.dead_letter_count = -1
        self._lock = asyncio.Lock()

    def _fresh(self, dead_letter_count: int) -> bool:
        recent = time.monotonic() - self.read_at < SLOW_SECTIONS_EVERY_S
        return recent and dead_letter_count == self.dead_letter_count

    async def get(self, request: web.Request, dead_letter_count: int) -> dict[str, Any]:
        if self._fresh(dead_letter_count):
            return self.sections
        async with self._lock:  # the first stream refreshes; the others wait and share
            if self._fresh(dead_letter_count):
                return self.sections
            sections = {}
            for name, path in SLOW_SECTIONS.items():
                sections[name] = await route_json(request, path)
            for name, path in WHOLE_SECTIONS.items():
                sections[name] = await route_all(request, path)
            self.sections, self.read_at = sections, time.monotonic()
            self.dead_letter_count = dead_letter_count
            return self.sections


SLOW_SECTIONS_CACHE = web.AppKey("dashboard_slow_sections", SlowSections)
FLEET_TREND = web.AppKey("dashboard_fleet_trend", FleetTrend)


async def build_snapshot(request: web.Request) -> dict[str, Any]:
    coordinator = coordinator_of(request)
    settings = coordinator.settings
    now_ms = await coordinator.store.printers.now_ms()
    dead_letter_count = await coordinator.store.jobs.dead_letter_count()
    printers = (await route_all(request, "/v1/printers?limit=500")).get("items", [])
    failovers = await coordinator.failover.decisions(limit=RECENT_FAILOVERS)
    return {
        "at": now_ms / 1000,
        "venue": settings.venue,
        "high_water_mark": settings.high_water_mark,
        "printers": printers,
        # The printers again, most troubled first, with what to do and their trend.
        "triage": triage(
            printers,
            failovers,
            high_water_mark=settings.high_water_mark,
            stale_after_s=STALE_AFTER_INTERVALS * settings.heartbeat_interval_s,
            trend_of=request.app[FLEET_TREND].of,
        ),
        "trend_step_s": request.app[FLEET_TREND].shape.step_s,
        "dead_letter_count": dead_letter_count,
        "parked": await parked_jobs(coordinator),
        "failovers": failovers,
        **await request.app[SLOW_SECTIONS_CACHE].get(request, dead_letter_count),
    }


async def sample_trends(app: web.Application) -> AsyncIterator[None]:
    """The cleanup context that keeps the fleet's trend while the app runs."""
    coordinator = app[COORDINATOR]
    trend = app[FLEET_TREND]
    loop = UpkeepLoop("dashboard_trend", lambda: trend.sample(coordinator.store),
                      trend.shape.sample_every_s)  # fmt: skip
    loop.start()
    yield
    await loop.stop()


def install(app: web.Application) -> None:
    app[SLOW_SECTIONS_CACHE] = SlowSections()
    app[FLEET_TREND] = FleetTrend(TREND_SHAPE)
    app.cleanup_ctx.append(sample_trends)
