"""Operator routes for printers: the fleet view, pause/resume, drain,
rebalance and the failover decisions."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from badgeline.coordinator.api.context import Coordinator, authenticate
from badgeline.coordinator.api.http import json_response, read_model
from badgeline.coordinator.control.rebalance import rebalance
from badgeline.log import log_event
from badgeline.protocol.errors import BadgelineError, ErrorCode
from badgeline.protocol.ids import PRINTER_ID_PATTERN, is_printer_id
from badgeline.protocol.states import CONFIRMATION_GUARANTEES, Confirmation

routes = web.RouteTableDef()


class PauseRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    for_s: float | None = Field(default=None, gt=0, le=7 * 24 * 3600)


class DrainRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    targets: list[str] | None = Field(default=None, max_length=100)

    def checked_targets(self) -> list[str] | None:
        for target in self.targets or []:
            if not is_printer_id(target):
                raise BadgelineError(
                    ErrorCode.VALIDATION_FAILED, f"{target!r} is not a printer id",
                    fields=[{"loc": ["targets"], "msg": f"must match {PRINTER_ID_PATTERN}"}],
                )  # fmt: skip
        return self.targets


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _printer_id(request: web.Request) -> str:
    printer_id = request.match_info["printer_id"]
    if not is_printer_id(printer_id):
        raise BadgelineError(ErrorCode.NOT_FOUND, f"{printer_id!r} is not a printer id")
    return printer_id


async def printer_summary(coordinator: Coordinator, printer_id: str, now_ms: int) -> dict[str, Any]:
    keys = coordinator.store.keys
    redis = coordinator.store.redis
    raw = {_text(k): _text(v) for k, v in (await redis.hgetall(keys.printer(printer_id))).items()}
    last = int(raw["last_heartbeat_ms"]) if "last_heartbeat_ms" in raw else None
    paused_until = int(raw.get("paused_until_ms", 0))
    return {
        "printer_id": printer_id,
        "state": raw.get("state", "unknown"),
        "health": json.loads(raw["health"]) if "health" in raw else None,
        "queue_depth": await redis.zcard(keys.queue(printer_id)),
        "in_flight": sorted(_text(j) for j in await redis.smembers(keys.printing(printer_id))),
        "paused": paused_until > now_ms,
        "paused_until": paused_until / 1000 if paused_until > now_ms else None,
        "last_heartbeat_age_s": (now_ms - last) / 1000 if last is not None else None,
        "agent_id": raw.get("agent_id"),
        "version": raw.get("version"),
        "labels": json.loads(raw.get("labels", "[]")),
        "address": _advertised(coordinator, printer_id),
        **_confirmation(raw.get("confirmation")),
    }


def _confirmation(reported: str | None) -> dict[str, str | None]:
    """How the printer's badges are confirmed, and what `printed` then promises."""
    try:
        confirmation = Confirmation(reported) if reported else None
    except ValueError:  # an agent of a newer release: show what it said
        return {"confirmation": reported, "confirmation_guarantee": None}
    if confirmation is None:
        return {"confirmation": None, "confirmation_guarantee": "not known yet: the agent"
                " learns it from the printer's first badge"}  # fmt: skip
    return {"confirmation": str(confirmation),
            "confirmation_guarantee": CONFIRMATION_GUARANTEES[confirmation]}  # fmt: skip


def _advertised(coordinator: Coordinator, printer_id: str) -> dict[str, object] | None:
    """Where the printer's agent is, as its mDNS advert says (None if not heard)."""
    if coordinator.agent_browser is None:
        return None
    seen = coordinator.agent_browser.get(printer_id)
    return seen.to_json() if seen is not None else None


async def _now_ms(coordinator: Coordinator) -> int:
    seconds, micros = await coordinator.store.redis.time()
    return int(seconds) * 1000 + int(micros) // 1000


@routes.get("/v1/printers")
async def list_printers(request: web.Request) -> web.Response:
    coordinator, _ = authenticate(request, "operator")
    now_ms = await _now_ms(coordinator)
    known = sorted(_text(p) for p in await coordinator.store.redis.smembers(
        coordinator.store.keys.printers))  # fmt: skip
    return json_response(
        {"printers": [await printer_summary(coordinator, p, now_ms) for p in known]}
    )


@routes.post("/v1/printers/{printer_id}/pause")
async def pause(request: web.Request) -> web.Response:
    coordinator, identity = authenticate(request, "operator")
    printer_id = _printer_id(request)
    body = await read_model(request, PauseRequest)
    now_ms = await _now_ms(coordinator)
    # Without a duration a pause lasts until resumed (a year is "until resumed").
    until = now_ms + int((body.for_s or 365 * 24 * 3600) * 1000)
    await coordinator.store.redis.hset(
        coordinator.store.keys.printer(printer_id), "paused_until_ms", until
    )
    # A long-poll parked on this printer waits for the end of the pause it last saw;
    # a new, shorter pause must wake it to read the new end.
    await coordinator.store.wake_printer(printer_id)
    log_event("printer_paused", printer_id=printer_id, for_s=body.for_s, actor=identity.actor)
    return json_response(await printer_summary(coordinator, printer_id, now_ms))


@routes.post("/v1/printers/{printer_id}/resume")
async def resume(request: web.Request) -> web.Response:
    coordinator, identity = authenticate(request, "operator")
    printer_id = _printer_id(request)
    key = coordinator.store.keys.printer(printer_id)
    await coordinator.store.redis.hset(key, "paused_until_ms", 0)
    await coordinator.store.wake_printer(printer_id)
    log_event("printer_resumed", printer_id=printer_id, actor=identity.actor)
    return json_response(await printer_summary(coordinator, printer_id, await _now_ms(coordinator)))


@routes.post("/v1/printers/{printer_id}/drain")
async def drain(request: web.Request) -> web.Response:
    """Fail a printer over by hand: pause it, then move its waiting work."""
    coordinator, identity = authenticate(request, "operator")
    printer_id = _printer_id(request)
    body = await read_model(request, DrainRequest)
    now_ms = await _now_ms(coordinator)
    await coordinator.store.redis.hset(
        coordinator.store.keys.printer(printer_id), "paused_until_ms",
        now_ms + 365 * 24 * 3600 * 1000,
    )  # fmt: skip
    decision = await coordinator.failover.execute(
        printer_id, mode="drain", reason=f"drained by {identity.actor}",
        targets=body.checked_targets(), actor=identity.actor,
    )  # fmt: skip
    return json_response(decision)


@routes.post("/v1/rebalance")
async def rebalance_queues(request: web.Request) -> web.Response:
    coordinator, identity = authenticate(request, "operator")
    moves = await rebalance(coordinator, identity.actor)
    return json_response({"moved": moves})


@routes.get("/v1/failovers")
async def failovers(request: web.Request) -> web.Response:
    coordinator, _ = authenticate(request, "operator")
    return json_response({"failovers": await coordinator.failover.decisions()})
