"""Where an agent may fetch badges from: an allow-list, because a kiosk names the source.

A badge reference comes from a kiosk, which is trusted to submit jobs and with
nothing else: not with the Pi's files, not with the venue network. Without
this list, a kiosk could print any PDF the agent's user can read, and learn
from the failures which paths exist; or use every agent in the venue to probe
hosts and ports on the venue LAN. So:

- `file://` refs are read only under `badge_file_roots` (none by default), and
  only the regular file found there after every symlink is resolved, checked
  again on the descriptor actually opened (a symlink swapped in between the
  check and the open cannot lead out);
- `http(s)://` refs only to the hosts of `badge_http_hosts`, and every redirect
  only within them. An entry is a name (`badges.example.org`, or
  `*.example.org` for its subdomains), an address (`10.0.0.5`) or a network
  (`10.0.0.0/24`), with `:port` for another port than the scheme's own (`:*`:
  any port). A
  name is resolved once per connection and the connection goes to the address
  that was checked, so a name that resolves elsewhere the next time (DNS
  rebinding) gains nothing. Addresses that are not public (loopback,
  link-local, private, multicast, unspecified, reserved) are reached only
  when an address or network entry names them: a name alone never leads there;
- the coordinator's own artifact store (`artifact://`) is always allowed.

Every refusal is the same `not_allowed` for the kiosk, whatever the reason (it
learns nothing about the Pi or the network from it); the agent's log says which
rule refused what, for the tech.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import os
import re
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from badgeline.log import log_event

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
DEFAULT_PORTS = {"http": 80, "https": 443}
ANY_PORT = 0  # `host:*`
_LABEL = r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?"
_NAME = re.compile(rf"^(\*\.)?({_LABEL}\.)*{_LABEL}$")


class SourceNotAllowed(Exception):
    """The agent may not fetch from there; the message is for the agent's log only."""


@dataclass(frozen=True)
class HostRule:
    """One `badge_http_hosts` entry."""

    name: str | None  # lower case; "*.x" allows the subdomains of x
    network: IPNetwork | None
    port: int | None  # None: the scheme's own port; ANY_PORT: any

    @classmethod
    def parse(cls, entry: str) -> HostRule:
        text = entry.strip().lower()
        host, port = _split_port(text)
        try:
            return cls(None, ipaddress.ip_network(host.strip("[]"), strict=False), port)
        except ValueError:
            pass
        if not _NAME.match(host):
            raise ValueError(
                f"{entry!r} is not a host name, *.domain, address or network (e.g. "
                "badges.example.org, *.example.org, 10.0.0.5, 10.0.0.0/24, host:8080, host:*)"
            )
        return cls(host, None, port)

    def allows_port(self, scheme: str, port: int) -> bool:
        if self.port == ANY_PORT:
            return True
        return port == (self.port if self.port is not None else DEFAULT_PORTS[scheme])

    def allows_name(self, host: str) -> bool:
        if self.name is None:
            return False
        if self.name.startswith("*."):
            return host.endswith(self.name[1:]) and host != self.name[2:]
        return host == self.name

    def allows_address(self, address: IPAddress) -> bool:
        return self.network is not None and address in self.network


def _split_port(text: str) -> tuple[str, int | None]:
    if text.startswith("[") and "]:" in text:  # [v6]:port
        host, _, port = text.rpartition(":")
        return host, _port(port, text)
    if text.count(":") == 1:  # name:port, v4:port, v4/n:port (a bare v6 has several)
        host, _, port = text.partition(":")
        return host, _port(port, text)
    return text, None


def _port(text: str, entry: str) -> int:
    if text == "*":
        return ANY_PORT
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise ValueError(f"{entry!r}: the port must be 1-65535, or * for any")
    return int(text)


def is_public(address: IPAddress) -> bool:
    """Reachable on the internet: not loopback, link-local, private, multicast or reserved."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return is_public(address.ipv4_mapped)
    return address.is_global and not address.is_multicast


class BadgeSources:
    """The agent's allow-list of badge sources (see the module's notes)."""

    def __init__(self, printer_id: str, file_roots: Iterable[Path], http_hosts: Iterable[str]):
        self.printer_id = printer_id
        self.file_roots = [Path(os.path.realpath(root)) for root in file_roots]
        self.rules = [HostRule.parse(entry) for entry in http_hosts]

    # ------------------------------------------------------------ files

    def allowed_file(self, path: str) -> str:
        """The real path of `path` if it lies under a root; SourceNotAllowed otherwise.

        The real path resolves every symlink: a link under a root that points out
        of it is refused like a path outside.
        """
        if not self.file_roots:
            raise SourceNotAllowed("no badge_file_roots are configured: file refs are off")
        real = os.path.realpath(path)
        if not self._under_a_root(real):
            raise SourceNotAllowed(f"{path} (really {real}) is outside badge_file_roots")
        return real

    def check_opened(self, fd: int, real: str) -> None:
        """The descriptor opened is the file that was checked (no symlink swapped in)."""
        opened = os.readlink(f"/proc/self/fd/{fd}") if os.path.exists("/proc/self/fd") else real
        if opened != real or not self._under_a_root(opened):
            raise SourceNotAllowed(f"{real} changed between its check and its open ({opened})")

    def _under_a_root(self, real: str) -> bool:
        return any(Path(real).is_relative_to(root) for root in self.file_roots)

    # ------------------------------------------------------------ hosts

    async def address_for(self, scheme: str, host: str, port: int) -> str:
        """The address to connect to for `host`, once allowed; SourceNotAllowed otherwise.

        Called for the first URL and for every redirect. Raises OSError when the
        name does not resolve (a network failure, not a refusal).
        """
        host = host.lower().strip("[]")
        rules = [rule for rule in self.rules if rule.allows_port(scheme, port)]
        if not rules:
            raise SourceNotAllowed(f"no badge_http_hosts entry allows {scheme} to port {port}")
        literal = _address(host)
        if literal is not None:
            return self._checked(str(literal), [literal], rules, named=False)
        if not any(rule.allows_name(host) for rule in rules):
            raise SourceNotAllowed(f"{host} is not among badge_http_hosts")
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        addresses = [ipaddress.ip_address(info[4][0]) for info in infos]
        return self._checked(host, addresses, rules, named=True)

    def _checked(
        self, host: str, addresses: list[IPAddress], rules: list[HostRule], *, named: bool
    ) -> str:
        for address in addresses:
            if any(rule.allows_address(address) for rule in rules):
                return str(address)
            if named and is_public(address):
                return str(address)
        raise SourceNotAllowed(
            f"{host} resolves to {', '.join(map(str, addresses))}: not public, and no"
            " address or network entry of badge_http_hosts names it"
            if named
            else f"{host} is not in an address or network entry of badge_http_hosts"
        )

    def log_refusal(self, ref: str, why: SourceNotAllowed) -> None:
        log_event("badge_source_refused", logging.WARNING, printer_id=self.printer_id,
                  ref=ref[:200], why=str(why))  # fmt: skip


def _address(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None
