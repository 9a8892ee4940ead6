"""What the agent browser and the coordinator follower share: one browse of a
service type, each service that appears resolved to an IPv4 address, a port and
its TXT, their background tasks held and cancelled on stop, and a zeroconf either
shared with the caller or opened (and closed) here.

A subclass names its service type, and says what a resolved service, a goodbye
and its background loop mean to it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, ClassVar, Self

from zeroconf import IPVersion, ServiceStateChange, Zeroconf
from zeroconf.asyncio import AsyncServiceBrowser, AsyncServiceInfo, AsyncZeroconf

from badgeline.discovery.names import DEFAULT_TIMING, DiscoveryTiming, open_zeroconf


@dataclass(frozen=True)
class ResolvedService:
    name: str
    # LIFO order: the newest address comes first after an update.
    address: str
    port: int
    txt: dict[str, str]


class ServiceBrowser:
    service_type: ClassVar[str]
    kind: ClassVar[str]  # what the service is, in log lines: agent, coordinator

    def __init__(
        self,
        *,
        interfaces: Sequence[str] | None = None,
        timing: DiscoveryTiming = DEFAULT_TIMING,
        zeroconf: AsyncZeroconf | None = None,
    ) -> None:
        self._interfaces = interfaces
        self._timing = timing
        self._shared_zeroconf = zeroconf
        self._zeroconf: AsyncZeroconf | None = None
        self._browser: AsyncServiceBrowser | None = None
        # strong references: the loop keeps only weak ones to fire-and-forget tasks
        self._tasks: set[asyncio.Task[None]] = set()

    # ------------------------------------------------------------ what a subclass says

    def _attach(self, zc: AsyncZeroconf) -> None:
        """Before browsing starts, on the zeroconf in use."""

    def _detach(self, zc: AsyncZeroconf) -> None:
        """On stop, before a zeroconf opened here is closed."""

    async def _background(self) -> None:
        """Runs from start to stop."""

    def _gone(self, name: str) -> None:
        """The service said goodbye."""

    async def _found(self, service: ResolvedService) -> None:
        """The service appeared or changed, and resolved."""

    # ------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        zc = self._shared_zeroconf or open_zeroconf(self._interfaces)
        self._zeroconf = zc
        self._attach(zc)
        self._browser = AsyncServiceBrowser(
            zc.zeroconf,
            self.service_type,
            handlers=[self._on_state_change],
            delay=self._timing.browse_interval_ms,
        )
        self._spawn(self._background())

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._browser is not None:
            await self._browser.async_cancel()
            self._browser = None
        if self._zeroconf is not None:
            self._detach(self._zeroconf)
            if self._shared_zeroconf is None:
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

    # ------------------------------------------------------------ browsing

    def _on_state_change(
        self,
        zeroconf: Zeroconf,
        service_type: str,
        name: str,
        state_change: ServiceStateChange,
    ) -> None:
        if state_change is ServiceStateChange.Removed:
            self._gone(name)
            return
        self._spawn(self._resolve(name))

    async def _resolve(self, name: str) -> None:
        assert self._zeroconf is not None
        info = AsyncServiceInfo(self.service_type, name)
        if not await info.async_request(self._zeroconf.zeroconf, self._timing.resolve_timeout_ms):
            # logged by the subclass's module, as its own lines are
            log = logging.getLogger(type(self).__module__)
            log.warning("mDNS: could not resolve %s %s", self.kind, name)
            return
        addresses = info.parsed_addresses(IPVersion.V4Only)
        if not addresses or info.port is None:
            return
        txt = {k: v or "" for k, v in info.decoded_properties.items()}
        await self._found(ResolvedService(name, addresses[0], info.port, txt))

    def _spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
