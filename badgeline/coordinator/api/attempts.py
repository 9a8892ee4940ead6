"""Limits where secrets are guessed: `POST /v1/enrol` (an enrolment code) and the
dashboard sign-in (an operator token), per client address.

Each route has a token bucket per client address (`credential_attempts_per_min`,
`credential_attempts_burst`) in Redis, taken by the same script as the kiosks'
(rate_limit-2.lua) before the handler runs, so every replica shares it and
concurrent guesses cannot slip past it. A request over it is 429 `rate_limited`
(`limit: "attempts"`) with `Retry-After`, whatever it carries: even the right
secret, or the 429 would say which guess was right. A request that succeeds
(an enrolment, a sign-in) gives its attempt back, so only refused guesses use
up the allowance and a fleet of agents enrolling from one address is not slowed.

The client is the peer address of the connection: the configuration has no
trusted proxies, so `X-Forwarded-For` is a header any guesser can write and is
not read. An IPv6 client counts by its /64, the block one host is given, which
it can spread a guessing run over.

Refusals are logged once per spell, not once per request: a guessing run of
thousands is one `credential_attempts_refused` line with its count, written when
the address has been quiet for `quiet_s` (or every `longest_s` while it goes on).
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import math
import time
from dataclasses import dataclass, field

from aiohttp import web

from badgeline.coordinator.api.context import coordinator_of
from badgeline.coordinator.api.http import Handler
from badgeline.log import log_event
from badgeline.protocol.errors import BadgelineError, ErrorCode

# The routes, by the name their buckets and log lines carry, and the answer that
# means the secret was right (its attempt is given back).
GUESSED_ROUTES = {
    ("POST", "/v1/enrol"): ("enrol", 201),
    ("POST", "/dashboard/login"): ("login", 303),
}
# A spell of refusals ends after this long without one; a spell that goes on is
# logged (and its count restarted) this often.
QUIET_S = 5.0
LONGEST_S = 60.0
# More addresses refused at once than this are counted together, under "*": a
# guesser with many addresses must not grow this replica's memory without bound.
MAX_SPELLS = 10_000
IPV6_HOST_PREFIX = 64


def client_address(request: web.Request) -> str:
    """Who is guessing: the connection's peer address."""
    return client_of(request.remote)


def client_of(peer: str | None) -> str:
    """The client a peer address counts as: an IPv4 address as itself (an IPv4 address
    mapped into IPv6 too), an IPv6 address as its /64."""
    try:
        address = ipaddress.ip_address(peer or "")
    except ValueError:
        return peer or "unknown"  # not IP (a Unix socket): one client
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, IPV6_HOST_PREFIX), strict=False))
    return str(address)


@dataclass
class _Spell:
    refused: int
    started: float
    last: float
    started_at: float  # wall clock, for the log line
    timer: asyncio.TimerHandle | None = None


@dataclass
class RefusalLog:
    """This replica's refusals, one log line per spell of each (route, client)."""

    quiet_s: float = QUIET_S
    longest_s: float = LONGEST_S
    spells: dict[tuple[str, str], _Spell] = field(default_factory=dict)

    def refused(self, route: str, client: str) -> None:
        if (route, client) not in self.spells and len(self.spells) >= MAX_SPELLS:
            client = "*"
        loop = asyncio.get_running_loop()
        now = loop.time()
        spell = self.spells.get((route, client))
        if spell is None:
            spell = self.spells[(route, client)] = _Spell(0, now, now, time.time())
            spell.timer = loop.call_at(now + self.quiet_s, self._check, route, client)
        spell.refused += 1
        spell.last = now

    def _check(self, route: str, client: str) -> None:
        spell = self.spells[(route, client)]
        loop = asyncio.get_running_loop()
        now = loop.time()
        if now - spell.last >= self.quiet_s:
            del self.spells[(route, client)]
            self._log(route, client, spell, ongoing=False)
            return
        if now - spell.started >= self.longest_s:
            self._log(route, client, spell, ongoing=True)
            spell.refused, spell.started, spell.started_at = 0, now, time.time()
        due = min(spell.last + self.quiet_s, spell.started + self.longest_s)
        spell.timer = loop.call_at(max(due, now), self._check, route, client)

    def _log(self, route: str, client: str, spell: _Spell, *, ongoing: bool) -> None:
        if spell.refused:
            log_event("credential_attempts_refused", logging.WARNING, route=route, client=client,
                      refused=spell.refused, since=round(spell.started_at, 3),
                      seconds=round(spell.last - spell.started, 3), ongoing=ongoing)  # fmt: skip

    def flush(self) -> None:
        """Log every open spell now (the process is stopping)."""
        for (route, client), spell in list(self.spells.items()):
            if spell.timer is not None:
                spell.timer.cancel()
            self._log(route, client, spell, ongoing=True)
        self.spells.clear()


REFUSALS = web.AppKey("credential_attempt_refusals", RefusalLog)


def _route_of(request: web.Request) -> tuple[str, str] | None:
    resource = request.match_info.route.resource
    return None if resource is None else (request.method, resource.canonical)


@web.middleware
async def attempts_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    route = _route_of(request)
    guessed = GUESSED_ROUTES.get(route) if route is not None else None
    if guessed is None:
        return await handler(request)
    name, success = guessed
    client = client_address(request)
    coordinator = coordinator_of(request)
    settings, limits = coordinator.settings, coordinator.store.limits
    rate_per_s = settings.credential_attempts_per_min / 60
    burst = settings.credential_attempts_burst
    taken = await limits.take_attempt(name, client, rate_per_s=rate_per_s, burst=burst)
    if not taken.admitted:
        request.app[REFUSALS].refused(name, client)
        retry_after_s = max(1, math.ceil(taken.retry_after_ms / 1000))
        raise BadgelineError(
            ErrorCode.RATE_LIMITED,
            f"too many attempts from this address; retry in {retry_after_s} s",
            extra={"limit": "attempts"}, retry_after_s=retry_after_s,
        )  # fmt: skip
    response = await handler(request)
    if response.status == success:
        await limits.return_attempt(name, client, rate_per_s=rate_per_s, burst=burst)
    return response


async def _flush(app: web.Application) -> None:
    app[REFUSALS].flush()


def install(app: web.Application) -> None:
    app[REFUSALS] = RefusalLog()
    app.middlewares.append(attempts_middleware)
    app.on_shutdown.append(_flush)
