"""Operator reports: every queue at a glance, active alerts, reconciliation and
usage statistics.

Nothing here scans the venue's keys. Live jobs come from one atomic read of
the indexes they sit in (census-9.lua); finished jobs are counted as they
finish, inside the script that finishes them (scripts/includes/tally.lua).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from badgeline.coordinator.api.context import Coordinator, authenticate
from badgeline.coordinator.api.http import json_response, query_model
from badgeline.coordinator.api.printers import printer_summary
from badgeline.coordinator.control.rebalance import SKEW_MARGIN
from badgeline.coordinator.control.routing import STALE_AFTER_INTERVALS
from badgeline.protocol.states import TERMINAL_STATES

routes = web.RouteTableDef()

# The seed's liveness check compares a queue now and thirty seconds ago: a head
# that has waited this long behind a live agent means nothing is pulling.
DEFAULT_STALL_AFTER_S = 30.0
# Most live jobs one census returns: printers x high-water mark is the normal
# ceiling; past this the report says `truncated` rather than stall Redis.
CENSUS_LIMIT = 20_000


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


async def _now_ms(coordinator: Coordinator) -> int:
    seconds, micros = await coordinator.store.redis.time()
    return int(seconds) * 1000 + int(micros) // 1000


# --------------------------------------------------------------------------- census


@dataclass(frozen=True)
class CensusJob:
    job_id: str
    state: str
    created_ms: int
    updated_ms: int
    printer_id: str
    attendee_id: str
    possible_duplicate: bool
    prints: int
    printed_by: str
    accepted: bool

    @property
    def live(self) -> bool:
        return self.state not in TERMINAL_STATES

    def brief(self, now_ms: int) -> dict[str, Any]:
        return {"job_id": self.job_id, "state": self.state, "attendee_id": self.attendee_id,
                "printer_id": self.printer_id, "age_s": (now_ms - self.created_ms) / 1000,
                "prints": self.prints}  # fmt: skip


@dataclass(frozen=True)
class Census:
    now_ms: int
    truncated: bool
    totals: dict[str, int]
    jobs: list[CensusJob]


async def take_census(coordinator: Coordinator) -> Census:
    k = coordinator.store.keys
    reply = await coordinator.store.scripts["census"](
        [k.printers, k.leases, k.retry, k.parked, k.dead_letters, k.held, k.stats_totals,
         k.possible_duplicates, k.printed_twice],
        [k.prefix, json.dumps(await _failover_held(coordinator)), CENSUS_LIMIT],
    )  # fmt: skip
    raw = json.loads(reply)
    # cjson writes an empty Lua table as {}, not [].
    jobs = [CensusJob(*row) for row in (raw["jobs"] or [])]
    return Census(int(raw["now_ms"]), bool(raw["truncated"]), dict(raw["totals"] or {}), jobs)


async def _failover_held(coordinator: Coordinator) -> list[str]:
    """Jobs a failover held for an operator sit in no index; their decisions
    name them. Only the `hold` policy produces them, so only then read."""
    if coordinator.settings.failover_policy != "hold":
        return []
    held = []
    for decision in await coordinator.failover.decisions(limit=1000):
        resolution = decision.get("inflight_resolution") or {}
        held += [job_id for job_id, outcome in resolution.items() if outcome == "held"]
    return held


# --------------------------------------------------------------------------- queues


class QueuesQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")
    stall_after_s: float = Field(default=DEFAULT_STALL_AFTER_S, ge=0.1, le=3600)


async def _head_wait_s(coordinator: Coordinator, printer_id: str, now_ms: int) -> float | None:
    store = coordinator.store
    head = await store.redis.zrange(store.keys.queue(printer_id), 0, 0)
    if not head:
        return None
    # updated_ms is the job's last transition: when it joined this queue.
    updated = await store.redis.hget(store.keys.job(_text(head[0])), "updated_ms")
    return (now_ms - int(updated)) / 1000 if updated is not None else None


def _can_take_work(printer: dict[str, Any]) -> bool:
    return printer["state"] == "healthy" and not printer["paused"]


def _flags(row: dict[str, Any], peers: list[dict[str, Any]], coordinator: Coordinator,
           stall_after_s: float) -> list[str]:  # fmt: skip
    settings = coordinator.settings
    depth, flags = row["queue_depth"], []
    if depth >= settings.high_water_mark:
        flags.append("full")
    # Skewed: rebalance would move work off it (the same margin, the same receivers).
    receivers = [p["queue_depth"] for p in peers if p is not row and _can_take_work(p)]
    if receivers and depth - min(receivers) >= SKEW_MARGIN:
        flags.append("skewed")
    wait = row["head_wait_s"]
    if wait is not None and wait >= stall_after_s:
        flags.append("stalled")
        age = row["last_heartbeat_age_s"]
        fresh = age is not None and age <= STALE_AFTER_INTERVALS * settings.heartbeat_interval_s
        # A zombie: its agent heartbeats and nothing holds it back, yet nothing is leased.
        if fresh and not row["paused"] and row["state"] != "dead":
            flags.append("zombie")
    return flags


async def queue_report(coordinator: Coordinator, stall_after_s: float) -> list[dict[str, Any]]:
    store = coordinator.store
    now_ms = await _now_ms(coordinator)
    known = sorted(_text(p) for p in await store.redis.smembers(store.keys.printers))
    rows = []
    for printer_id in known:
        row = await printer_summary(coordinator, printer_id, now_ms)
        row["head_wait_s"] = await _head_wait_s(coordinator, printer_id, now_ms)
        rows.append(row)
    for row in rows:
        row["flags"] = _flags(row, rows, coordinator, stall_after_s)
    return rows


@routes.get("/v1/queues")
async def list_queues(request: web.Request) -> web.Response:
    coordinator, _ = authenticate(request, "operator")
    query = query_model(request, QueuesQuery)
    rows = await queue_report(coordinator, query.stall_after_s)
    fields = ("printer_id", "queue_depth", "state", "paused", "in_flight", "head_wait_s",
              "last_heartbeat_age_s", "flags")  # fmt: skip
    return json_response({
        "high_water_mark": coordinator.settings.high_water_mark, "skew_margin": SKEW_MARGIN,
        "stall_after_s": query.stall_after_s,
        "queues": [{name: row[name] for name in fields} for row in rows],
    })  # fmt: skip


# --------------------------------------------------------------------------- alerts


def _alert(kind: str, severity: str, message: str, printer_id: str | None = None) -> dict[str, Any]:
    return {"kind": kind, "severity": severity, "printer_id": printer_id, "message": message}


def _why_dead(health: dict[str, Any] | None) -> str:
    if not health:
        return "no heartbeat"
    causes = [name for name in ("jammed", "cover_open") if health.get(name)]
    if health.get("paper") == "out":
        causes.append("paper out")
    if not health.get("reachable", True):
        causes.append("unreachable")
    return ", ".join(causes) or "missed heartbeats"


def _printer_alerts(row: dict[str, Any]) -> list[dict[str, Any]]:
    printer_id, health = row["printer_id"], row["health"] or {}
    alerts = []
    if row["state"] == "dead":
        message = f"{printer_id} is dead ({_why_dead(health)})"
        alerts.append(_alert("printer_dead", "critical", message, printer_id))
    if health.get("paper") == "low":
        message = f"{printer_id} is low on paper: load a new roll"
        alerts.append(_alert("paper_low", "warning", message, printer_id))
    if "zombie" in row["flags"]:
        message = (f"{printer_id} heartbeats but has not taken its head job for "
                   f"{row['head_wait_s']:.0f} s: drain it")  # fmt: skip
        alerts.append(_alert("queue_stalled", "critical", message, printer_id))
    if "full" in row["flags"]:
        message = f"{printer_id} is at its high-water mark"
        alerts.append(_alert("queue_full", "warning", message, printer_id))
    return alerts


async def _venue_alerts(coordinator: Coordinator, rows: list[dict[str, Any]]) -> list[Any]:
    redis, keys = coordinator.store.redis, coordinator.store.keys
    async with redis.pipeline(transaction=False) as pipe:
        pipe.zcard(keys.parked)
        pipe.zcard(keys.dead_letters)
        pipe.scard(keys.printed_twice)
        parked, dead_letters, printed_twice = await pipe.execute()
    alerts = []
    if rows and not any(_can_take_work(r) for r in rows):
        message = "no printer is healthy and unpaused: new work is parked"
        alerts.append(_alert("no_healthy_target", "critical", message))
    if parked:
        message = f"{parked} job(s) parked with no healthy printer to go to"
        alerts.append(_alert("parked_jobs", "critical", message))
    if printed_twice:
        message = f"{printed_twice} job(s) printed more than once: run reconcile"
        alerts.append(_alert("duplicate_prints", "critical", message))
    if dead_letters:
        message = f"{dead_letters} dead-lettered job(s): list and redrive them"
        alerts.append(_alert("dead_letters", "warning", message))
    return alerts


async def active_alerts(coordinator: Coordinator, stall_after_s: float) -> list[dict[str, Any]]:
    rows = await queue_report(coordinator, stall_after_s)
    alerts = [alert for row in rows for alert in _printer_alerts(row)]
    return alerts + await _venue_alerts(coordinator, rows)


@routes.get("/v1/alerts")
async def list_alerts(request: web.Request) -> web.Response:
    coordinator, _ = authenticate(request, "operator")
    query = query_model(request, QueuesQuery)
    events = await coordinator.store.redis.lrange(coordinator.store.keys.alert_events, 0, 49)
    return json_response({
        "alerts": await active_alerts(coordinator, query.stall_after_s),
        "events": [json.loads(raw) for raw in events],
    })  # fmt: skip


# --------------------------------------------------------------------------- reconcile


class ReconcileQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")
    deadline_s: float = Field(default=300, ge=0, le=7 * 24 * 3600)


def reconcile_report(census: Census, deadline_s: float) -> dict[str, Any]:
    now, totals = census.now_ms, census.totals
    live = [j for j in census.jobs if j.live]
    by_state: dict[str, int] = {}
    for job in live:
        by_state[job.state] = by_state.get(job.state, 0) + 1
    failed = [j for j in census.jobs if j.state == "failed"]
    counts: dict[str, Any] = {name: totals.get(name, 0) for name in
                              ("accepted", "printed", "canceled", "shed", "reprints")}  # fmt: skip
    counts.update(failed=len(failed), open=len(live), open_by_state=by_state)
    # Every accepted job is printed, canceled, failed or still open: anything
    # else is a job lost, or a finish the tally missed. Must be 0.
    counts["unaccounted"] = (counts["accepted"] - counts["printed"] - counts["canceled"]
                             - sum(1 for j in failed + live if j.accepted))  # fmt: skip
    overdue = [j for j in live if now - j.created_ms >= deadline_s * 1000]
    return {
        "deadline_s": deadline_s,
        "truncated": census.truncated,
        "printed_more_than_once": [j.brief(now) for j in census.jobs if j.prints > 1],
        "possible_duplicates": [j.brief(now) for j in census.jobs if j.possible_duplicate],
        "not_terminal": [j.brief(now) for j in overdue],
        "counts": counts,
    }


@routes.get("/v1/reconcile")
async def reconcile(request: web.Request) -> web.Response:
    coordinator, _ = authenticate(request, "operator")
    query = query_model(request, ReconcileQuery)
    return json_response(reconcile_report(await take_census(coordinator), query.deadline_s))


# --------------------------------------------------------------------------- stats


class StatsQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")
    by: Literal["printer", "hour", "source"] = "printer"


def _counts(raw: dict[Any, Any]) -> dict[str, int]:
    return {_text(key): int(value) for key, value in raw.items()}


def _hour_label(hour_start_s: str) -> str:
    return datetime.fromtimestamp(int(hour_start_s), UTC).strftime("%Y-%m-%dT%H:00Z")


def _rows(by: str, counts: dict[str, int]) -> list[dict[str, Any]]:
    if by == "printer":
        printers = sorted({key.split("|", 1)[1] for key in counts})
        return [{"printer_id": p, "printed": counts.get(f"printed|{p}", 0),
                 "failed_attempts": counts.get(f"failed|{p}", 0)} for p in printers]  # fmt: skip
    if by == "hour":
        return [{"hour": _hour_label(h), "printed": counts[h]} for h in sorted(counts, key=int)]
    return [{"source": source, "printed": counts[source]} for source in sorted(counts)]


@routes.get("/v1/stats")
async def stats(request: web.Request) -> web.Response:
    coordinator, _ = authenticate(request, "operator")
    query = query_model(request, StatsQuery)
    redis, keys = coordinator.store.redis, coordinator.store.keys
    dimension = {"printer": keys.stats_by_printer, "hour": keys.stats_by_hour,
                 "source": keys.stats_by_source}[query.by]  # fmt: skip
    async with redis.pipeline(transaction=True) as pipe:
        pipe.hgetall(keys.stats_totals)
        pipe.hgetall(dimension)
        pipe.hgetall(keys.failure_reasons)
        totals, by_dimension, reasons = (_counts(r) for r in await pipe.execute())
    names = ("accepted", "printed", "shed", "canceled", "reprints", "failed_attempts")
    accepted = totals.get("accepted", 0)
    return json_response({
        "by": query.by,
        "rows": _rows(query.by, by_dimension),
        "totals": {name: totals.get(name, 0) for name in names},
        "reprint_rate": totals.get("reprints", 0) / accepted if accepted else 0.0,
        "failure_reasons": [{"reason": reason, "count": count} for reason, count
                            in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))],
    })  # fmt: skip
