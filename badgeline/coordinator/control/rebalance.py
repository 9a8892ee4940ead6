"""Rebalance: move the excess of skewed queues to the least-loaded healthy peers.

Jobs keep their ids, idempotency keys and scores, so they keep their place in
print order; the tail of a long queue (the jobs that would wait longest) moves.
"""

from __future__ import annotations

from badgeline.coordinator.control.failover import FailoverController
from badgeline.coordinator.store import Store
from badgeline.log import log_event

# A queue is skewed when it holds this many more jobs than the least-loaded
# healthy peer: small differences are not worth reordering a line for.
SKEW_MARGIN = 2


async def rebalance(store: Store, failover: FailoverController, actor: str) -> list[dict[str, str]]:
    printers = await store.printers.known()
    depths = await store.printers.queue_depths(printers)
    receivers = await store.printers.healthy(printers)
    moves: list[dict[str, str]] = []
    sources = list(printers)
    while receivers and sources:
        source = max(sources, key=lambda p: depths[p])
        # A job stays in its printer's pool, as in a failover (its pool peers, else any).
        peers = set(await failover.candidates(source, printers))
        allowed = [p for p in receivers if p in peers]
        target = min(allowed, key=lambda p: depths[p]) if allowed else None
        if target is None or depths[source] - depths[target] < SKEW_MARGIN:
            sources.remove(source)  # nothing to gain here; another pool may still be skewed
            continue
        job_id = await store.printers.last_queued(source)
        if job_id is None:
            break
        if not await store.printers.move_queued(job_id, source, target, actor):
            receivers.remove(target)
            continue
        depths[source] -= 1
        depths[target] += 1
        moves.append({"job_id": job_id, "from": source, "to": target})
    log_event("queues_rebalanced", moved=len(moves), actor=actor)
    await failover.log_job_events(
        "job_rebalanced", {m["job_id"]: m["to"] for m in moves}, actor=actor
    )
    return moves
