"""How an agent with no coordinator URL configured finds the coordinator, and follows it.

The follower keeps browsing after the first answer: a coordinator laptop that
gets a new DHCP lease, or is replaced by the spare, re-announces under the
same name with a new address, and the agent should switch without a restart.
A goodbye does not clear the location: the coordinator is most likely
restarting, and the last known address is still the best guess.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from zeroconf import DNSOutgoing, DNSQuestion
from zeroconf.asyncio import AsyncZeroconf

from badgeline.discovery.browse import ResolvedService, ServiceBrowser
from badgeline.discovery.errors import CoordinatorNotFound
from badgeline.discovery.names import (
    COORDINATOR_SERVICE_TYPE,
    DEFAULT_TIMING,
    DNS_CLASS_IN,
    DNS_FLAGS_QUERY,
    DNS_TYPE_PTR,
    TXT_API_PATH,
    TXT_SCHEME,
    TXT_VENUE,
    TXT_VERSION,
    DiscoveryTiming,
)

log = logging.getLogger(__name__)

# When nothing has answered this long after start, the follower asks once more
# for a multicast answer (see CoordinatorFollower._background).
MULTICAST_RETRY_AFTER_S = 0.25


@dataclass(frozen=True)
class CoordinatorLocation:
    """Where the coordinator's HTTP API is, as its advert says."""

    name: str
    address: str
    port: int
    venue: str
    version: str
    api_path: str
    scheme: str = "http"  # TXT `scheme`; adverts from before it existed are http

    @property
    def base_url(self) -> str:
        return f"{self.scheme}://{self.address}:{self.port}"

    @property
    def api_url(self) -> str:
        return self.base_url + self.api_path


OnChange = Callable[[CoordinatorLocation], None]


class CoordinatorFollower(ServiceBrowser):
    """Browses `_badgeline._tcp`; `location` is the coordinator to talk to now.

    With `venue` set, adverts of other venues' coordinators (two halls, one
    network) are ignored; without it the first one found wins.
    """

    service_type = COORDINATOR_SERVICE_TYPE
    kind = "coordinator"

    def __init__(
        self,
        *,
        venue: str | None = None,
        interfaces: Sequence[str] | None = None,
        timing: DiscoveryTiming = DEFAULT_TIMING,
        on_change: OnChange | None = None,
        zeroconf: AsyncZeroconf | None = None,
    ) -> None:
        super().__init__(interfaces=interfaces, timing=timing, zeroconf=zeroconf)
        self._venue = venue
        self._on_change = on_change
        self._location: CoordinatorLocation | None = None
        self._present = False
        self._updated = asyncio.Condition()

    @property
    def location(self) -> CoordinatorLocation | None:
        return self._location

    @property
    def present(self) -> bool:
        """False after the coordinator's goodbye, until it announces again."""
        return self._present

    async def wait_for_location(
        self, timeout_s: float, *, other_than: CoordinatorLocation | None = None
    ) -> CoordinatorLocation:
        """The current location once there is one (different from `other_than`, if given)."""

        def ready() -> bool:
            return self._location is not None and self._location != other_than

        try:
            async with self._updated:
                await asyncio.wait_for(self._updated.wait_for(ready), timeout_s)
        except TimeoutError:
            raise CoordinatorNotFound(
                f"no badgeline coordinator answered on mDNS within {timeout_s:g}s"
                + (f" for venue {self._venue!r}" if self._venue else "")
            ) from None
        assert self._location is not None
        return self._location

    async def _background(self) -> None:
        """Ask once more, by multicast, when nothing has answered shortly after start.

        python-zeroconf asks its first question with the unicast-response bit
        (QU, RFC 6762 §5.4), and its next one a second later. A unicast answer to
        port 5353 reaches only one of the sockets bound to that port on the host:
        beside the agent, avahi-daemon on a Pi, or the other badgeline processes
        on a test machine. When it went to another socket, the agent found the
        coordinator 1.1 s after start instead of 0.1 s (bench/bench_agent.py,
        found by mDNS). So, with no answer shortly after start, ask once more with
        a question whose answer is multicast, which every socket receives. RFC 6762
        §5.2 asks for a second or more between the first two questions; this one
        deliberately comes sooner, once per start, as one small packet."""
        await asyncio.sleep(MULTICAST_RETRY_AFTER_S)
        if self._location is not None or self._zeroconf is None:
            return
        query = DNSOutgoing(DNS_FLAGS_QUERY)
        query.add_question(DNSQuestion(COORDINATOR_SERVICE_TYPE, DNS_TYPE_PTR, DNS_CLASS_IN))
        self._zeroconf.zeroconf.async_send(query)

    def _gone(self, name: str) -> None:
        if self._location is not None and self._location.name == name:
            log.warning("mDNS: coordinator %s said goodbye; keeping its last address", name)
            self._present = False

    async def _found(self, service: ResolvedService) -> None:
        location = _location_from(service)
        if self._wanted(location):
            await self._adopt(location)

    def _wanted(self, location: CoordinatorLocation) -> bool:
        if self._venue is not None:
            return location.venue == self._venue
        # No venue configured: stick with the coordinator we follow, and let a
        # second one on the network take over only once ours has left.
        current = self._location
        return current is None or current.name == location.name or not self._present

    async def _adopt(self, location: CoordinatorLocation) -> None:
        self._present = True
        if location == self._location:
            return
        previous, self._location = self._location, location
        if previous is None:
            log.info("mDNS: found coordinator at %s", location.api_url)
        else:
            log.warning("mDNS: coordinator moved %s -> %s", previous.api_url, location.api_url)
        async with self._updated:
            self._updated.notify_all()
        if self._on_change is not None:
            self._on_change(location)


def _location_from(service: ResolvedService) -> CoordinatorLocation:
    txt = service.txt
    return CoordinatorLocation(
        name=service.name,
        address=service.address,
        port=service.port,
        venue=txt.get(TXT_VENUE, ""),
        version=txt.get(TXT_VERSION, ""),
        api_path=txt.get(TXT_API_PATH, "/v1"),
        scheme="https" if txt.get(TXT_SCHEME) == "https" else "http",
    )


async def find_coordinator(
    timeout_s: float = 10.0,
    *,
    venue: str | None = None,
    interfaces: Sequence[str] | None = None,
    timing: DiscoveryTiming = DEFAULT_TIMING,
) -> CoordinatorLocation:
    """One-shot lookup; raises CoordinatorNotFound when nothing answers in time."""
    async with CoordinatorFollower(venue=venue, interfaces=interfaces, timing=timing) as follower:
        return await follower.wait_for_location(timeout_s)
