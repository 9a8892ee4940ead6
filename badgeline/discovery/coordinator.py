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
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

from zeroconf import DNSOutgoing, DNSQuestion, IPVersion, ServiceStateChange, Zeroconf
from zeroconf.asyncio import AsyncServiceBrowser, AsyncServiceInfo, AsyncZeroconf

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
    open_zeroconf,
)

log = logging.getLogger(__name__)

# When nothing has answered this long after start, the follower asks once more
# for a multicast answer (see CoordinatorFollower._ask_again_by_multicast).
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


class CoordinatorFollower:
    """Browses `_badgeline._tcp`; `location` is the coordinator to talk to now.

    With `venue` set, adverts of other venues' coordinators (two halls, one
    network) are ignored; without it the first one found wins.
    """

    def __init__(
        self,
        *,
        venue: str | None = None,
        interfaces: Sequence[str] | None = None,
        timing: DiscoveryTiming = DEFAULT_TIMING,
        on_change: OnChange | None = None,
        zeroconf: AsyncZeroconf | None = None,
    ) -> None:
        self._venue = venue
        self._interfaces = interfaces
        self._timing = timing
        self._on_change = on_change
        self._shared_zeroconf = zeroconf
        self._zeroconf: AsyncZeroconf | None = None
        self._browser: AsyncServiceBrowser | None = None
        self._location: CoordinatorLocation | None = None
        self._present = False
        self._updated = asyncio.Condition()
        self._tasks: set[asyncio.Task[None]] = set()

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

    async def start(self) -> None:
        zc = self._shared_zeroconf or open_zeroconf(self._interfaces)
        self._zeroconf = zc
        self._browser = AsyncServiceBrowser(
            zc.zeroconf,
            COORDINATOR_SERVICE_TYPE,
            handlers=[self._on_state_change],
            delay=self._timing.browse_interval_ms,
        )
        self._spawn(self._ask_again_by_multicast())

    async def _ask_again_by_multicast(self) -> None:
        """python-zeroconf asks its first question with the unicast-response bit
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

    def _spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._browser is not None:
            await self._browser.async_cancel()
            self._browser = None
        if self._zeroconf is not None and self._shared_zeroconf is None:
            await self._zeroconf.async_close()
        self._zeroconf = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    def _on_state_change(
        self,
        zeroconf: Zeroconf,
        service_type: str,
        name: str,
        state_change: ServiceStateChange,
    ) -> None:
        if state_change is ServiceStateChange.Removed:
            if self._location is not None and self._location.name == name:
                log.warning("mDNS: coordinator %s said goodbye; keeping its last address", name)
                self._present = False
            return
        self._spawn(self._resolve(name))

    async def _resolve(self, name: str) -> None:
        assert self._zeroconf is not None
        info = AsyncServiceInfo(COORDINATOR_SERVICE_TYPE, name)
        if not await info.async_request(self._zeroconf.zeroconf, self._timing.resolve_timeout_ms):
            log.warning("mDNS: could not resolve coordinator %s", name)
            return
        location = _location_from(info)
        if location is None or not self._wanted(location):
            return
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


def _location_from(info: AsyncServiceInfo) -> CoordinatorLocation | None:
    addresses = info.parsed_addresses(IPVersion.V4Only)
    if not addresses or info.port is None:
        return None
    txt = {k: v or "" for k, v in info.decoded_properties.items()}
    return CoordinatorLocation(
        name=info.name,
        # LIFO order: the newest address comes first after an update.
        address=addresses[0],
        port=info.port,
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
