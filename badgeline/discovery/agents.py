"""The coordinator's view of the agents on the network: address, port, TXT, last seen.

Agents that say goodbye are dropped. A Pi that loses power says nothing, and
its PTR record would linger in caches for 75 minutes, so the browser re-asks
each known agent now and then and reports the ones that stopped answering as
stale, keeping them listed (a Pi that comes back answers again).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Self

from zeroconf import (
    DNSOutgoing,
    DNSQuestion,
    IPVersion,
    RecordUpdate,
    RecordUpdateListener,
    ServiceStateChange,
    Zeroconf,
)
from zeroconf.asyncio import AsyncServiceBrowser, AsyncServiceInfo, AsyncZeroconf

from badgeline.discovery.names import (
    AGENT_SERVICE_TYPE,
    DEFAULT_TIMING,
    DNS_CLASS_IN,
    DNS_FLAGS_QUERY,
    DNS_TYPE_SRV,
    TXT_MODEL,
    TXT_PRINTER_ID,
    TXT_STATUS_PORT,
    TXT_VERSION,
    DiscoveryTiming,
    open_zeroconf,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SeenAgent:
    """One agent as mDNS last described it."""

    name: str
    printer_id: str
    address: str
    port: int
    txt: dict[str, str] = field(default_factory=dict)
    # wall-clock seconds (time.time()) of the last record heard from it
    last_seen: float = 0.0

    @property
    def model(self) -> str:
        return self.txt.get(TXT_MODEL, "unknown")

    @property
    def version(self) -> str:
        return self.txt.get(TXT_VERSION, "")

    @property
    def status_url(self) -> str:
        port = self.txt.get(TXT_STATUS_PORT) or str(self.port)
        return f"http://{self.address}:{port}"

    def is_stale(self, now: float, stale_after_s: float) -> bool:
        return now - self.last_seen > stale_after_s

    def to_json(self) -> dict[str, object]:
        """What `GET /v1/printers` shows of an agent's mDNS advert."""
        return {
            "printer_id": self.printer_id,
            "address": self.address,
            "port": self.port,
            "status_url": self.status_url,
            "model": self.model,
            "version": self.version,
            "last_seen": datetime.fromtimestamp(self.last_seen, UTC).isoformat(),
        }


class _LastSeenListener(RecordUpdateListener):
    """Bumps last_seen on any record heard for a known agent, refreshes included."""

    def __init__(self, browser: AgentBrowser) -> None:
        self._browser = browser

    def async_update_records(self, zc: Zeroconf, now: float, records: list[RecordUpdate]) -> None:
        for update in records:
            self._browser._heard(update.new.name)


class AgentBrowser:
    """Tracks `_badgeline-agent._tcp` services: `agents()` is the current picture."""

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
        self._listener = _LastSeenListener(self)
        self._agents: dict[str, SeenAgent] = {}
        # strong references: the loop keeps only weak ones to fire-and-forget tasks
        self._tasks: set[asyncio.Task[None]] = set()
        self._changed = asyncio.Event()

    def agents(self) -> list[SeenAgent]:
        return sorted(self._agents.values(), key=lambda agent: agent.printer_id)

    def get(self, printer_id: str) -> SeenAgent | None:
        return next((a for a in self._agents.values() if a.printer_id == printer_id), None)

    def stale_agents(self, now: float | None = None) -> list[SeenAgent]:
        moment = time.time() if now is None else now
        return [a for a in self.agents() if a.is_stale(moment, self._timing.stale_after_s)]

    async def wait_changed(self, timeout_s: float) -> bool:
        """Wait until the set of agents (or one's details) changes; False on timeout."""
        self._changed.clear()
        try:
            await asyncio.wait_for(self._changed.wait(), timeout_s)
        except TimeoutError:
            return False
        return True

    async def start(self) -> None:
        zc = self._shared_zeroconf or open_zeroconf(self._interfaces)
        self._zeroconf = zc
        zc.zeroconf.async_add_listener(self._listener, None)
        self._browser = AsyncServiceBrowser(
            zc.zeroconf,
            AGENT_SERVICE_TYPE,
            handlers=[self._on_state_change],
            delay=self._timing.browse_interval_ms,
        )
        self._spawn(self._probe_forever())

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._browser is not None:
            await self._browser.async_cancel()
            self._browser = None
        if self._zeroconf is not None:
            self._zeroconf.zeroconf.async_remove_listener(self._listener)
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

    def _on_state_change(
        self,
        zeroconf: Zeroconf,
        service_type: str,
        name: str,
        state_change: ServiceStateChange,
    ) -> None:
        if state_change is ServiceStateChange.Removed:
            if self._agents.pop(name, None) is not None:
                log.info("mDNS: agent %s said goodbye", name)
                self._changed.set()
            return
        self._spawn(self._resolve(name))

    async def _resolve(self, name: str) -> None:
        assert self._zeroconf is not None
        info = AsyncServiceInfo(AGENT_SERVICE_TYPE, name)
        if not await info.async_request(self._zeroconf.zeroconf, self._timing.resolve_timeout_ms):
            log.warning("mDNS: could not resolve agent %s", name)
            return
        addresses = info.parsed_addresses(IPVersion.V4Only)
        if not addresses or info.port is None:
            return
        txt = {k: v or "" for k, v in info.decoded_properties.items()}
        agent = SeenAgent(
            name=name,
            printer_id=txt.get(TXT_PRINTER_ID) or name.split(".", 1)[0],
            address=addresses[0],
            port=info.port,
            txt=txt,
            last_seen=time.time(),
        )
        previous = self._agents.get(name)
        self._agents[name] = agent
        if previous is None or replace(previous, last_seen=0.0) != replace(agent, last_seen=0.0):
            log.info("mDNS: agent %s at %s:%s", agent.printer_id, agent.address, agent.port)
            self._changed.set()

    def _heard(self, record_name: str) -> None:
        agent = self._agents.get(record_name)
        if agent is not None:
            self._agents[record_name] = replace(agent, last_seen=time.time())

    async def _probe_forever(self) -> None:
        while True:
            await asyncio.sleep(self._timing.liveness_probe_interval_s)
            if self._zeroconf is None or not self._agents:
                continue
            # One query naming every known agent's SRV: answers bump last_seen
            # through _LastSeenListener; silence lets it age into "stale".
            query = DNSOutgoing(DNS_FLAGS_QUERY)
            for name in self._agents:
                query.add_question(DNSQuestion(name, DNS_TYPE_SRV, DNS_CLASS_IN))
            self._zeroconf.zeroconf.async_send(query)

    def _spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
