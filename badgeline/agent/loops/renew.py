"""Keep the leases of badges waiting their turn, so a slow printer costs no job its place.

A lease lasts `lease_ttl_s` (30 s by default) from when it was given, and a
badge leased behind one that prints for 30 s (a card printer; or any slow
printer before the agent knows it can pipeline) would see its lease expire
while it waits: the coordinator takes the job back, the agent's start is
refused, and the job goes round again. So every lease journaled and not yet
granted is renewed at a third of its time, until its start is asked for
(granted, the job is `printing` and holds no lease) or the badge fails.

A renewal the coordinator refuses (the lease is gone: the job was canceled,
failed over, or the lease expired during an outage) is logged; the start
asked later is refused as well, and the journal drops the lease then.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from badgeline.agent.client import CoordinatorClient, CoordinatorRejected, CoordinatorUnavailable
from badgeline.agent.prepare import JobTicket
from badgeline.log import log_event

# Renew at this share of the lease time: two more tries fit before it would expire.
RENEW_AT = 1 / 3
# When the coordinator did not say how long its leases last (a lease from the journal).
DEFAULT_LEASE_TTL_S = 30.0


@dataclass
class _Held:
    ticket: JobTicket
    ttl_s: float
    renew_at: float  # loop time


class LeaseKeeper:
    def __init__(self, client: CoordinatorClient) -> None:
        self.client = client
        self._held: dict[str, _Held] = {}
        self._changed = asyncio.Event()

    def hold(self, ticket: JobTicket) -> None:
        """Keep this lease until `release` (its start was asked for, or it failed)."""
        ttl_s = ticket.lease_ttl_s or DEFAULT_LEASE_TTL_S
        renew_at = asyncio.get_running_loop().time() + ttl_s * RENEW_AT
        self._held[ticket.lease_id] = _Held(ticket, ttl_s, renew_at)
        self._changed.set()

    def release(self, lease_id: str) -> None:
        self._held.pop(lease_id, None)

    @property
    def held(self) -> int:
        return len(self._held)

    async def run(self, stopping: asyncio.Event) -> None:
        while not stopping.is_set():
            loop = asyncio.get_running_loop()
            due = min((held.renew_at for held in self._held.values()), default=None)
            wait_s = 3600.0 if due is None else max(0.0, due - loop.time())
            self._changed.clear()
            waits = [asyncio.ensure_future(self._changed.wait()),
                     asyncio.ensure_future(stopping.wait())]  # fmt: skip
            try:
                await asyncio.wait(waits, timeout=wait_s, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for wait in waits:
                    wait.cancel()
            if stopping.is_set():
                return
            for held in [h for h in self._held.values() if h.renew_at <= loop.time()]:
                await self._renew(held)

    async def _renew(self, held: _Held) -> None:
        ticket = held.ticket
        loop = asyncio.get_running_loop()
        try:
            answer = await self.client.renew(
                ticket.job_id, ticket.lease_id, correlation_id=ticket.correlation_id
            )
        except (CoordinatorUnavailable, CoordinatorRejected) as error:
            # Tried again soon: the lease still has two thirds of its time at most.
            held.renew_at = loop.time() + min(held.ttl_s * RENEW_AT / 2, 5.0)
            log_event("lease_renewal_failed", logging.WARNING, problem=str(error),
                      **ticket.trace())  # fmt: skip
            return
        if not answer.renewed:
            self.release(ticket.lease_id)
            log_event("lease_lost", logging.WARNING, state=str(answer.state), **ticket.trace())
            return
        held.ttl_s = answer.lease_ttl_s
        held.renew_at = loop.time() + answer.lease_ttl_s * RENEW_AT
        log_event("lease_renewed", logging.DEBUG, **ticket.trace())
