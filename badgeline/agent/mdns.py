"""The agent on mDNS: its own advert, and the coordinator's when no URL is configured.

One zeroconf responder serves both (one pair of multicast sockets per Pi).
The advert is announced in the background: probing for the name takes about
a second and printing must not wait for it. A name conflict (two Pis given
one printer id) is logged loudly but does not stop printing: the coordinator
still hears this agent's heartbeats, and the operator sees the error in
/status and the journal.

The host's addresses are re-read now and then: a Pi whose Wi-Fi came up (or
got a new DHCP lease) after the agent started re-announces itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence

from zeroconf.asyncio import AsyncZeroconf

from badgeline.discovery import (
    AgentAdvertiser,
    CoordinatorFollower,
    CoordinatorLocation,
    NameConflict,
    open_zeroconf,
)
from badgeline.log import log_event

ADDRESS_RECHECK_S = 30.0
log = logging.getLogger(__name__)


class AgentMdns:
    """Advertise `<printer_id>._badgeline-agent._tcp`; optionally follow the coordinator."""

    def __init__(
        self,
        *,
        printer_id: str,
        model: str,
        interfaces: Sequence[str] | None,
        follow_coordinator: bool,
        venue: str | None,
        on_coordinator: Callable[[CoordinatorLocation], None],
    ) -> None:
        self.printer_id = printer_id
        self.model = model
        self.interfaces = list(interfaces) if interfaces is not None else None
        self.follow_coordinator = follow_coordinator
        self.venue = venue
        self.on_coordinator = on_coordinator
        self.advertised = False
        self.problem: str | None = None  # why the advert is not up, if it is not
        self._zeroconf: AsyncZeroconf | None = None
        self._follower: CoordinatorFollower | None = None
        self._advertiser: AgentAdvertiser | None = None
        self._announcing: asyncio.Task[None] | None = None
        self._rechecking: asyncio.Task[None] | None = None
        self._stopping = False

    def status(self) -> dict[str, object]:
        """What /status shows of mDNS."""
        advertiser = self._advertiser
        return {
            "enabled": True,
            "advertised": self.advertised,
            "name": advertiser.name if advertiser is not None else None,
            "addresses": advertiser.addresses if advertiser is not None else [],
            "problem": self.problem,
        }

    async def start(self, status_port: int) -> None:
        """Browse for the coordinator now; announce ourselves (pointing at `status_port`) soon."""
        zeroconf = open_zeroconf(self.interfaces)
        self._zeroconf = zeroconf
        if self.follow_coordinator:
            self._follower = CoordinatorFollower(
                venue=self.venue, interfaces=self.interfaces, on_change=self.on_coordinator,
                zeroconf=zeroconf,
            )  # fmt: skip
            await self._follower.start()
        self._advertiser = AgentAdvertiser(
            self.printer_id, status_port=status_port, model=self.model,
            interfaces=self.interfaces, zeroconf=zeroconf,
        )  # fmt: skip
        self._announcing = asyncio.create_task(
            self._announce(self._advertiser), name="agent-mdns-announce"
        )

    async def stop(self) -> None:
        """Say goodbye (and wait until it is sent), stop browsing, close the responder."""
        if self._stopping:
            return
        self._stopping = True
        if self._announcing is not None:
            # A goodbye for a name still being probed would not be sent: let the
            # announcement finish (about a second) so the goodbye can follow it.
            with contextlib.suppress(Exception):
                await self._announcing
        if self._rechecking is not None:
            self._rechecking.cancel()
            await asyncio.gather(self._rechecking, return_exceptions=True)
        if self._advertiser is not None:
            try:
                await self._advertiser.stop()
            except Exception as error:  # the follower and the sockets must still close
                log.warning("mDNS goodbye for %s failed: %r", self.printer_id, error)
            self.advertised = False
        try:
            if self._follower is not None:
                await self._follower.stop()
        finally:
            if self._zeroconf is not None:
                await self._zeroconf.async_close()
                self._zeroconf = None

    async def _announce(self, advertiser: AgentAdvertiser) -> None:
        try:
            await advertiser.start()
        except NameConflict as conflict:
            self.problem = str(conflict)
            log_event("mdns_name_conflict", logging.ERROR, printer_id=self.printer_id,
                      error=str(conflict))  # fmt: skip
            return
        except OSError as error:
            self.problem = f"cannot announce on mDNS: {error}"
            log_event("mdns_failed", logging.ERROR, printer_id=self.printer_id, error=str(error))
            return
        self.advertised = True
        log_event("mdns_advertised", printer_id=self.printer_id, name=advertiser.name,
                  addresses=advertiser.addresses, status_port=advertiser.port)  # fmt: skip
        if not self._stopping:
            self._rechecking = asyncio.create_task(
                self._recheck_addresses(advertiser), name="agent-mdns-addresses"
            )

    async def _recheck_addresses(self, advertiser: AgentAdvertiser) -> None:
        while True:
            await asyncio.sleep(ADDRESS_RECHECK_S)
            try:
                if await advertiser.refresh_addresses():
                    log_event("mdns_addresses_changed", printer_id=self.printer_id,
                              addresses=advertiser.addresses)  # fmt: skip
            except OSError as error:
                log.warning("re-reading this host's addresses failed: %r", error)
