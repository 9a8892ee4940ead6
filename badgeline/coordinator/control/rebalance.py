"""Rebalance: move the excess of skewed queues to the least-loaded healthy peers.

Jobs keep their ids, idempotency keys and scores, so they keep their place in
print order; the tail of a long queue (the jobs that would wait longest) moves.
"""

from __future__ import annotations

from typing import Any

from badgeline.coordinator.api.context import Coordinator
from badgeline.log import log_event

# A queue is skewed when it holds this many more jobs than the least-loaded
# healthy peer: small differences are not worth reordering a line for.
SKEW_MARGIN = 2


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


async def _depths(coordinator: Coordinator, printer_ids: list[str]) -> dict[str, int]:
    redis, keys = coordinator.store.redis, coordinator.store.keys
    return {p: int(await redis.zcard(keys.queue(p))) for p in printer_ids}


async def _healthy(coordinator: Coordinator, printer_ids: list[str]) -> list[str]:
    redis, keys = coordinator.store.redis, coordinator.store.keys
    return [p for p in printer_ids if await redis.hget(keys.printer(p), "state") == b"healthy"]


async def rebalance(coordinator: Coordinator, actor: str) -> list[dict[str, str]]:
    store, settings = coordinator.store, coordinator.settings
    printers = sorted(_text(p) for p in await store.redis.smembers(store.keys.printers))
    depths = await _depths(coordinator, printers)
    receivers = await _healthy(coordinator, printers)
    moves: list[dict[str, str]] = []
    sources = list(printers)
    while receivers and sources:
        source = max(sources, key=lambda p: depths[p])
        # A job stays in its printer's pool, as in a failover (its pool peers, else any).
        peers = set(await coordinator.failover.candidates(source, printers))
        allowed = [p for p in receivers if p in peers]
        target = min(allowed, key=lambda p: depths[p]) if allowed else None
        if target is None or depths[source] - depths[target] < SKEW_MARGIN:
            sources.remove(source)  # nothing to gain here; another pool may still be skewed
            continue
        tail = await store.redis.zrange(store.keys.queue(source), -1, -1)
        if not tail:
            break
        job_id = _text(tail[0])
        moved = await store.scripts["move_queued"](
            [store.keys.queue(source), store.keys.queue(target)],
            [store.keys.prefix, job_id, target, settings.high_water_mark, actor,
             store.keys.wake_channel, f"rebalanced from {source} to {target}"],
        )  # fmt: skip
        if not moved:
            receivers.remove(target)
            continue
        depths[source] -= 1
        depths[target] += 1
        moves.append({"job_id": job_id, "from": source, "to": target})
    log_event("queues_rebalanced", moved=len(moves), actor=actor)
    await coordinator.failover.log_job_events(
        "job_rebalanced", {m["job_id"]: m["to"] for m in moves}, actor=actor
    )
    return moves
