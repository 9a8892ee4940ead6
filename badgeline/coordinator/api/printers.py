"""Operator routes for printers: the fleet view, pause/resume, drain,
rebalance and the failover decisions."""

from __future__ import annotations

from typing import Any

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from badgeline.coordinator.api.context import Coordinator, authenticate
from badgeline.coordinator.api.http import json_response, query_model, read_model
from badgeline.coordinator.api.paging import PageQuery, decode_cursor, page_from
from badgeline.coordinator.control.fleet import UNTIL_RESUMED_S, printer_summary
from badgeline.coordinator.control.rebalance import rebalance
from badgeline.log import log_event
from badgeline.protocol.errors import BadgelineError, ErrorCode
from badgeline.protocol.ids import PRINTER_ID_PATTERN, is_printer_id
from badgeline.protocol.pages import FailoverPage, PrinterPage

routes = web.RouteTableDef()


# What an operator says about a pause or a refusal, shown wherever the printer is:
# a sentence, not a document.
MAX_REASON_CHARS = 200


class PauseRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, str_strip_whitespace=True)
    for_s: float | None = Field(default=None, gt=0, le=7 * 24 * 3600)
    reason: str | None = Field(default=None, min_length=1, max_length=MAX_REASON_CHARS)


class RejectRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, str_strip_whitespace=True)
    reason: str | None = Field(default=None, min_length=1, max_length=MAX_REASON_CHARS)


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


def _printer_id(request: web.Request) -> str:
    printer_id = request.match_info["printer_id"]
    if not is_printer_id(printer_id):
        raise BadgelineError(ErrorCode.NOT_FOUND, f"{printer_id!r} is not a printer id")
    return printer_id


async def _summary(coordinator: Coordinator, printer_id: str, now_ms: int) -> dict[str, Any]:
    return await printer_summary(coordinator.store, coordinator.agent_browser, printer_id, now_ms)


@routes.get("/v1/printers")
async def list_printers(request: web.Request) -> web.Response:
    coordinator, _ = authenticate(request, "operator")
    query = query_model(request, PageQuery)
    after = decode_cursor(query.after, "printers", (str,))
    known = [p for p in await coordinator.store.printers.known() if after is None or p > after[0]]
    page = page_from(known[: query.limit + 1], lambda p: [p], "printers", query.limit)
    # Only this page's printers are read: a page costs its own size, not the fleet's.
    now_ms = await coordinator.store.printers.now_ms()
    printers = [await _summary(coordinator, printer_id, now_ms) for printer_id in page.items]
    return json_response(PrinterPage(items=printers, next=page.next))


@routes.post("/v1/printers/{printer_id}/pause")
async def pause(request: web.Request) -> web.Response:
    coordinator, identity = authenticate(request, "operator")
    printer_id = _printer_id(request)
    body = await read_model(request, PauseRequest)
    now_ms = await coordinator.store.printers.now_ms()
    # Without a duration a pause lasts until resumed (a year is "until resumed").
    until = now_ms + int((body.for_s or UNTIL_RESUMED_S) * 1000)
    # A long-poll parked on this printer waits for the end of the pause it last saw;
    # a new, shorter pause wakes it to read the new end (pause_until does).
    await coordinator.store.printers.pause_until(printer_id, until, body.reason or "")
    log_event("printer_paused", printer_id=printer_id, for_s=body.for_s, reason=body.reason,
              actor=identity.actor)  # fmt: skip
    return json_response(await _summary(coordinator, printer_id, now_ms))


@routes.post("/v1/printers/{printer_id}/resume")
async def resume(request: web.Request) -> web.Response:
    coordinator, identity = authenticate(request, "operator")
    printer_id = _printer_id(request)
    await coordinator.store.printers.pause_until(printer_id, 0)
    log_event("printer_resumed", printer_id=printer_id, actor=identity.actor)
    now_ms = await coordinator.store.printers.now_ms()
    return json_response(await _summary(coordinator, printer_id, now_ms))


@routes.post("/v1/printers/{printer_id}/reject")
async def reject(request: web.Request) -> web.Response:
    """Take no new jobs for the printer (as cupsreject): its queue keeps printing."""
    coordinator, identity = authenticate(request, "operator")
    printer_id = _printer_id(request)
    body = await read_model(request, RejectRequest)
    await coordinator.store.printers.set_rejecting(printer_id, True, body.reason or "")
    log_event("printer_rejecting", printer_id=printer_id, reason=body.reason,
              actor=identity.actor)  # fmt: skip
    now_ms = await coordinator.store.printers.now_ms()
    return json_response(await _summary(coordinator, printer_id, now_ms))


@routes.post("/v1/printers/{printer_id}/accept")
async def accept(request: web.Request) -> web.Response:
    """Take new jobs for the printer again (as cupsaccept)."""
    coordinator, identity = authenticate(request, "operator")
    printer_id = _printer_id(request)
    await coordinator.store.printers.set_rejecting(printer_id, False)
    log_event("printer_accepting", printer_id=printer_id, actor=identity.actor)
    now_ms = await coordinator.store.printers.now_ms()
    return json_response(await _summary(coordinator, printer_id, now_ms))


@routes.post("/v1/printers/{printer_id}/drain")
async def drain(request: web.Request) -> web.Response:
    """Fail a printer over by hand: pause it, then move its waiting work."""
    coordinator, identity = authenticate(request, "operator")
    printer_id = _printer_id(request)
    body = await read_model(request, DrainRequest)
    now_ms = await coordinator.store.printers.now_ms()
    await coordinator.store.printers.pause_until(
        printer_id, now_ms + UNTIL_RESUMED_S * 1000, f"drained by {identity.actor}"
    )
    decision = await coordinator.failover.execute(
        printer_id, mode="drain", reason=f"drained by {identity.actor}",
        targets=body.checked_targets(), actor=identity.actor,
    )  # fmt: skip
    return json_response(decision)


@routes.post("/v1/rebalance")
async def rebalance_queues(request: web.Request) -> web.Response:
    coordinator, identity = authenticate(request, "operator")
    moves = await rebalance(coordinator.store, coordinator.failover, identity.actor)
    return json_response({"moved": moves})


@routes.get("/v1/failovers")
async def failovers(request: web.Request) -> web.Response:
    coordinator, _ = authenticate(request, "operator")
    query = query_model(request, PageQuery)
    after = decode_cursor(query.after, "failovers", (str,))
    # Newest first, by position after the last decision seen: decisions made while a
    # client pages are ahead of its first page, never in the pages it reads next.
    rows = await coordinator.store.failovers.decision_page(
        after[0] if after else None, query.limit + 1
    )
    page = page_from(rows, lambda row: [row[0]], "failovers", query.limit)
    decisions = [decision for _, decision in page.items if decision is not None]
    return json_response(FailoverPage(items=decisions, next=page.next))
