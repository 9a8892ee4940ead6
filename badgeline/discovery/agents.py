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
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from zeroconf import DNSOutgoing, DNSQuestion, RecordUpdate, RecordUpdateListener, Zeroconf
from zeroconf.asyncio import AsyncZeroconf

from badgeline.discovery.browse import ResolvedService, ServiceBrowser
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


class AgentBrowser(ServiceBrowser):
    """Tracks `_badgeline-agent._tcp` services: `agents()` is the current picture."""

    service_type = AGENT_SERVICE_TYPE
    kind = "agent"

    def __init__(
        self,
        *,
        interfaces: Sequence[str] | None = None,
        timing: DiscoveryTiming = DEFAULT_TIMING,
        zeroconf: AsyncZeroconf | None = None,
    ) -> None:
        super().__init__(interfaces=interfaces, timing=timing, zeroconf=zeroconf)
        self._listener = _LastSeenListener(self)
        self._agents: dict[str, SeenAgent] = {}
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

    def _attach(self, zc: AsyncZeroconf) -> None:
        zc.zeroconf.async_add_listener(self._listener, None)

    def _detach(self, zc: AsyncZeroconf) -> None:
        zc.zeroconf.async_remove_listener(self._listener)

    def _gone(self, name: str) -> None:
        if self._agents.pop(name, None) is not None:
            log.info("mDNS: agent %s said goodbye", name)
            self._changed.set()

    async def _found(self, service: ResolvedService) -> None:
        agent = SeenAgent(
            name=service.name,
            printer_id=service.txt.get(TXT_PRINTER_ID) or service.name.split(".", 1)[0],
            address=service.address,
            port=service.port,
            txt=service.txt,
            last_seen=time.time(),
        )
        previous = self._agents.get(service.name)
        self._agents[service.name] = agent
        if previous is None or replace(previous, last_seen=0.0) != replace(agent, last_seen=0.0):
            log.info("mDNS: agent %s at %s:%s", agent.printer_id, agent.address, agent.port)
            self._changed.set()

    def _heard(self, record_name: str) -> None:
        agent = self._agents.get(record_name)
        if agent is not None:
            self._agents[record_name] = replace(agent, last_seen=time.time())

    async def _background(self) -> None:
        """Re-ask the known agents now and then (see the module notes)."""
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
