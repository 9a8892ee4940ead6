"""The fleet as operators see it: each printer's summary, its queue's flags, and
the alerts that follow from them."""

from __future__ import annotations

from typing import Any

from badgeline.coordinator.config import CoordinatorSettings
from badgeline.coordinator.control.rebalance import SKEW_MARGIN
from badgeline.coordinator.control.routing import STALE_AFTER_INTERVALS
from badgeline.coordinator.store import Store
from badgeline.discovery.agents import AgentBrowser
from badgeline.protocol.states import CONFIRMATION_GUARANTEES, Confirmation

# A head that has waited this long behind a live agent means nothing is pulling
# (compare a queue now and thirty seconds ago).
DEFAULT_STALL_AFTER_S = 30.0
# A pause without a duration, and a drain, last until resumed: a year is that.
UNTIL_RESUMED_S = 365 * 24 * 3600


async def printer_summary(
    store: Store, browser: AgentBrowser | None, printer_id: str, now_ms: int
) -> dict[str, Any]:
    record = await store.printers.record(printer_id)
    last, paused_until = record.last_heartbeat_ms, record.paused_until_ms
    paused = paused_until > now_ms
    return {
        "printer_id": printer_id,
        "state": record.state,
        "health": record.health,
        "queue_depth": record.queue_depth,
        "in_flight": record.in_flight,
        "paused": paused,
        "paused_until": paused_until / 1000 if paused else None,
        "paused_reason": (record.paused_reason or None) if paused else None,
        "rejecting": record.rejecting,
        "rejecting_reason": (record.rejecting_reason or None) if record.rejecting else None,
        "last_heartbeat_age_s": (now_ms - last) / 1000 if last is not None else None,
        "agent_id": record.agent_id,
        "version": record.version,
        "labels": record.labels,
        "address": _advertised(browser, printer_id),
        "language": record.language,
        **_confirmation(record.confirmation),
    }


async def fleet_summary(store: Store, browser: AgentBrowser | None) -> list[dict[str, Any]]:
    """Every printer's summary, at one reading of the Redis clock."""
    now_ms = await store.printers.now_ms()
    return [await printer_summary(store, browser, p, now_ms) for p in await store.printers.known()]


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


def _advertised(browser: AgentBrowser | None, printer_id: str) -> dict[str, object] | None:
    """Where the printer's agent is, as its mDNS advert says (None if not heard)."""
    if browser is None:
        return None
    seen = browser.get(printer_id)
    return seen.to_json() if seen is not None else None


def can_take_work(printer: dict[str, Any]) -> bool:
    return printer["state"] == "healthy" and not printer["paused"] and not printer["rejecting"]


def _flags(row: dict[str, Any], peers: list[dict[str, Any]], settings: CoordinatorSettings,
           stall_after_s: float) -> list[str]:  # fmt: skip
    depth, flags = row["queue_depth"], []
    if depth >= settings.high_water_mark:
        flags.append("full")
    # Skewed: rebalance would move work off it (the same margin, the same receivers).
    receivers = [p["queue_depth"] for p in peers if p is not row and can_take_work(p)]
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


async def queue_report(
    store: Store, browser: AgentBrowser | None, stall_after_s: float
) -> list[dict[str, Any]]:
    now_ms = await store.printers.now_ms()
    rows = []
    for printer_id in await store.printers.known():
        row = await printer_summary(store, browser, printer_id, now_ms)
        since = await store.printers.head_since_ms(printer_id)
        row["head_wait_s"] = (now_ms - since) / 1000 if since is not None else None
        rows.append(row)
    for row in rows:
        row["flags"] = _flags(row, rows, store.settings, stall_after_s)
    return rows
