"""Advertising an agent or the coordinator on mDNS, with a clean goodbye.

python-zeroconf's register/unregister/update return a task that completes
only once the announcements (or goodbyes) were actually sent: we await that
task too, or a process that exits right after `stop()` leaves its advert in
every cache on the network for up to 75 minutes.

An agent's name is its printer id: a clash there is a real mistake (two Pis,
one printer id) and start() raises NameConflict. A coordinator instead takes
the next free name and keeps serving (conflicts.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Self

from zeroconf import DNSService, NonUniqueNameException
from zeroconf.asyncio import AsyncServiceInfo, AsyncZeroconf

from badgeline import __version__
from badgeline.discovery import conflicts
from badgeline.discovery.errors import NameConflict
from badgeline.discovery.names import (
    AGENT_SERVICE_TYPE,
    COORDINATOR_SERVICE_TYPE,
    TXT_API_PATH,
    TXT_MODEL,
    TXT_PRINTER_ID,
    TXT_SCHEME,
    TXT_STATUS_PORT,
    TXT_VENUE,
    TXT_VERSION,
    host_label,
    instance_name,
    local_ipv4_addresses,
    open_zeroconf,
)

log = logging.getLogger(__name__)


SOCKET_CLOSE_WAIT_S = 2.0


class ServiceAdvertiser:
    """One advertised service: `start()` announces, `stop()` says goodbye.

    Pass `zeroconf` to share one responder between several adverts of the
    same process (an agent advertises itself and follows the coordinator);
    otherwise the advertiser opens and closes its own.
    """

    def __init__(
        self,
        *,
        service_type: str,
        instance: str,
        host: str,
        port: int,
        txt: Mapping[str, str],
        interfaces: Sequence[str] | None = None,
        addresses: Sequence[str] | None = None,
        zeroconf: AsyncZeroconf | None = None,
    ) -> None:
        self._interfaces = interfaces
        self._fixed_addresses = list(addresses) if addresses is not None else None
        self._shared_zeroconf = zeroconf
        self._zeroconf: AsyncZeroconf | None = None
        self._info = self._build_info(
            service_type, instance_name(instance, service_type), host, port, dict(txt)
        )
        self._registered = False

    @property
    def name(self) -> str:
        """The full instance name, e.g. `printer-a._badgeline-agent._tcp.local.`."""
        return str(self._info.name)

    @property
    def addresses(self) -> list[str]:
        return list(self._info.parsed_addresses())

    @property
    def port(self) -> int:
        return int(self._info.port or 0)

    async def start(self) -> None:
        """Probe for the name, then announce; raises NameConflict if it is taken."""
        zc = self._shared_zeroconf or open_zeroconf(self._interfaces)
        self._zeroconf = zc
        try:
            await self._register(zc)
        except BaseException:
            await self._close_own()
            raise
        self._registered = True
        log.info("mDNS: advertising %s at %s:%s", self.name, self.addresses, self.port)

    async def _register(self, zc: AsyncZeroconf) -> None:
        try:
            # Announcing waits for the probes (RFC 6762 §8.1), so a duplicate
            # printer id is caught here rather than fighting on the network.
            await (await zc.async_register_service(self._info))
        except NonUniqueNameException as error:
            raise NameConflict(f"{self.name} is already advertised on this network") from error

    async def update(
        self,
        *,
        addresses: Sequence[str] | None = None,
        port: int | None = None,
        txt: Mapping[str, str] | None = None,
    ) -> None:
        """Re-announce with new addresses/port/TXT (a DHCP renewal moved us, a status change)."""
        info = self._info
        self._info = self._build_info(
            info.type,
            info.name,
            info.server or "",
            port if port is not None else self.port,
            dict(txt) if txt is not None else dict(info.decoded_properties),  # type: ignore[arg-type]
            addresses=addresses,
        )
        if self._registered and self._zeroconf is not None:
            await (await self._zeroconf.async_update_service(self._info))
            log.info("mDNS: %s now at %s:%s", self.name, self.addresses, self.port)

    async def refresh_addresses(self) -> bool:
        """Re-read this host's addresses; re-announce if they changed. True when they did."""
        if self._fixed_addresses is not None:
            return False
        current = local_ipv4_addresses(self._interfaces)
        if sorted(current) == sorted(self.addresses):
            return False
        await self.update(addresses=current)
        return True

    async def stop(self) -> None:
        """Send the goodbye (TTL 0) and wait until it is on the wire."""
        if self._registered and self._zeroconf is not None:
            self._registered = False
            await (await self._zeroconf.async_unregister_service(self._info))
            log.info("mDNS: goodbye sent for %s", self.name)
        await self._close_own()

    async def _close_own(self) -> None:
        if self._zeroconf is not None and self._shared_zeroconf is None:
            engine = self._zeroconf.zeroconf.engine
            transports = (*engine.senders, *engine.readers)
            sockets = [w.transport.get_extra_info("socket") for w in transports]
            await self._zeroconf.async_close()
            # zeroconf closes its transports, which drop their port-5353 sockets
            # in callbacks on later loop turns: wait (briefly, bounded) until
            # they are really closed, so a restart can bind again at once.
            loop = asyncio.get_running_loop()
            deadline = loop.time() + SOCKET_CLOSE_WAIT_S
            while any(s is not None and s.fileno() != -1 for s in sockets):
                if loop.time() > deadline:
                    break
                await asyncio.sleep(0.005)
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

    def _build_info(
        self,
        service_type: str,
        name: str,
        host: str,
        port: int,
        txt: dict[str, str],
        addresses: Sequence[str] | None = None,
    ) -> AsyncServiceInfo:
        if addresses is not None:
            parsed = list(addresses)
        elif self._fixed_addresses is not None:
            parsed = self._fixed_addresses
        else:
            parsed = local_ipv4_addresses(self._interfaces)
        server = host if host.endswith(".local.") else f"{host_label(host)}.local."
        return AsyncServiceInfo(
            service_type, name, port=port, properties=txt, server=server, parsed_addresses=parsed
        )


class AgentAdvertiser(ServiceAdvertiser):
    """`<printer_id>._badgeline-agent._tcp.local.` pointing at the agent's status endpoint."""

    def __init__(
        self,
        printer_id: str,
        *,
        status_port: int,
        model: str = "unknown",
        version: str = __version__,
        interfaces: Sequence[str] | None = None,
        addresses: Sequence[str] | None = None,
        zeroconf: AsyncZeroconf | None = None,
    ) -> None:
        # Our own host name, not the Pi's: avahi-daemon on Raspberry Pi OS owns
        # `<hostname>.local`, and two responders answering for one name conflict.
        super().__init__(
            service_type=AGENT_SERVICE_TYPE,
            instance=printer_id,
            host=f"badgeline-agent-{printer_id}",
            port=status_port,
            txt={
                TXT_PRINTER_ID: printer_id,
                TXT_MODEL: model,
                TXT_VERSION: version,
                TXT_STATUS_PORT: str(status_port),
            },
            interfaces=interfaces,
            addresses=addresses,
            zeroconf=zeroconf,
        )


class CoordinatorAdvertiser(ServiceAdvertiser):
    """`<venue>._badgeline._tcp.local.`: where agents find the coordinator's HTTP API.

    Agents pick a coordinator by its TXT `venue`, not by its instance name, so a
    coordinator that finds its name taken renames itself (`badgeline coordinator
    hall-b (laptop-2)`), logs a warning, and stays findable; `name` is the current one.
    """

    def __init__(
        self,
        venue: str,
        *,
        port: int = 8420,
        api_path: str = "/v1",
        scheme: str = "http",
        version: str = __version__,
        interfaces: Sequence[str] | None = None,
        addresses: Sequence[str] | None = None,
        zeroconf: AsyncZeroconf | None = None,
    ) -> None:
        machine = host_label(socket.gethostname())
        self._names = conflicts.instance_candidates(f"badgeline coordinator {venue}", machine)
        super().__init__(
            service_type=COORDINATOR_SERVICE_TYPE,
            instance=next(self._names),
            # The machine in the host name: two coordinators of one venue on two
            # hosts must not claim one host name with two addresses.
            host=f"badgeline-coordinator-{venue}-{machine}",
            port=port,
            txt={TXT_VENUE: venue, TXT_VERSION: version, TXT_API_PATH: api_path,
                 TXT_SCHEME: scheme},
            interfaces=interfaces,
            addresses=addresses,
            zeroconf=zeroconf,
        )  # fmt: skip
        self._guard = conflicts.NameGuard(self._on_rival)
        self._renaming: asyncio.Task[None] | None = None
        self.renames = 0

    async def _register(self, zc: AsyncZeroconf) -> None:
        zc.zeroconf.async_add_listener(self._guard, None)
        for _ in range(conflicts.MAX_INSTANCE_NAMES):
            self._guard.watch(self._info)
            try:
                await (await zc.async_register_service(self._info))
            except NonUniqueNameException:
                self._take_next_name("found while probing")
                continue
            rivals = conflicts.rivals_in_cache(zc.zeroconf, self._info)
            if any(conflicts.loses_to(self._info, rival) for rival in rivals):
                # Heard during our probes, but not as a conflict zeroconf checks for.
                self._withdraw(zc)
                self._take_next_name("heard before our announcement was done")
                continue
            # Whoever else holds this name answers this when it can; the guard hears it.
            conflicts.ask_for(zc.zeroconf, self._info)
            return
        zc.zeroconf.async_remove_listener(self._guard)
        raise NameConflict(
            f"{self.name}: {conflicts.MAX_INSTANCE_NAMES} coordinator names for this venue "
            "are taken on this network"
        )

    def _on_rival(self, rival: DNSService) -> None:
        if not self._registered or self._renaming is not None:
            return  # still probing (checked once registered), or already moving
        if conflicts.loses_to(self._info, rival):
            self._renaming = asyncio.ensure_future(self._rename_after_conflict(rival))

    async def _rename_after_conflict(self, rival: DNSService) -> None:
        zc = self._zeroconf
        try:
            if zc is None or not self._registered:
                return
            self._registered = False
            self._withdraw(zc)
            self._take_next_name(f"announced by {rival.server}:{rival.port}")
            await self._register(zc)
            self._registered = True
            log.info("mDNS: advertising %s at %s:%s", self.name, self.addresses, self.port)
        except Exception:  # a serving coordinator never dies of its advert
            log.exception("mDNS: re-advertising %s after a name conflict failed", self.name)
        finally:
            self._renaming = None

    def _withdraw(self, zc: AsyncZeroconf) -> None:
        """Stop answering for the current name, without a goodbye for the winner's records."""
        zc.zeroconf.registry.async_remove(self._info)
        conflicts.send_srv_goodbye(zc.zeroconf, self._info)

    def _take_next_name(self, how: str) -> None:
        old = self.name
        info = self._info
        instance = next(self._names)
        self._info = self._build_info(
            info.type, instance_name(instance, info.type), info.server or "", self.port,
            dict(info.decoded_properties),  # type: ignore[arg-type]
            addresses=self.addresses,
        )  # fmt: skip
        self.renames += 1
        log.warning(
            "mDNS: %s is taken by another coordinator (%s); advertising as %s instead",
            old, how, self.name,
        )  # fmt: skip

    async def stop(self) -> None:
        if self._renaming is not None:
            self._renaming.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._renaming
        if self._zeroconf is not None:
            self._zeroconf.zeroconf.async_remove_listener(self._guard)
        await super().stop()
