"""The census of live jobs, and the exactly-once reconciliation read from it."""

from __future__ import annotations

from typing import Any

from badgeline.coordinator.control.failover import FailoverController
from badgeline.coordinator.store import Store
from badgeline.coordinator.store.reports import Census


async def take_census(store: Store, failover: FailoverController) -> Census:
    return await store.reports.census(await _failover_held(store, failover))


async def _failover_held(store: Store, failover: FailoverController) -> list[str]:
    """Jobs a failover held for an operator sit in no index; their decisions
    name them. Only the `hold` policy produces them, so only then read."""
    if store.settings.failover_policy != "hold":
        return []
    held = []
    for decision in await failover.decisions(limit=1000):
        resolution = decision.get("inflight_resolution") or {}
        held += [job_id for job_id, outcome in resolution.items() if outcome == "held"]
    return held


def reconcile_report(census: Census, deadline_s: float) -> dict[str, Any]:
    now, totals = census.now_ms, census.totals
    live = [j for j in census.jobs if j.live]
    by_state: dict[str, int] = {}
    for job in live:
        by_state[job.state] = by_state.get(job.state, 0) + 1
    failed = [j for j in census.jobs if j.state == "failed"]
    counts: dict[str, Any] = {name: totals.get(name, 0) for name in
                              ("accepted", "printed", "canceled", "expired", "shed",
                               "reprints")}  # fmt: skip
    # Jobs that left Redis after their retention (retire-4.lua) are counted, not
    # listed: printed, canceled and expired ones are in those totals already; the failed
    # ones, and those printed more than once, are counted as they leave.
    retired = {name: totals.get(f"retired{suffix}", 0) for name, suffix in
               (("jobs", ""), ("failed", "_failed"), ("printed_more_than_once", "_printed_twice"),
                ("possible_duplicates", "_possible_duplicates"))}  # fmt: skip
    counts.update(failed=len(failed) + retired["failed"], open=len(live), open_by_state=by_state,
                  retired=retired)  # fmt: skip
    # Every accepted job is printed, canceled, expired, failed or still open:
    # anything else is a job lost, or a finish the tally missed. Must be 0.
    counts["unaccounted"] = (counts["accepted"] - counts["printed"] - counts["canceled"]
                             - counts["expired"] - retired["failed"]
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
