"""Service types, TXT keys, timing and the shared zeroconf factory.

Every mDNS name badgeline puts on the network is built here, so an
independent browser (Avahi, Bonjour, dig) sees exactly what the docs say.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import ifaddr
from zeroconf import InterfaceChoice, IPVersion
from zeroconf.asyncio import AsyncZeroconf

# RFC 6763 caps the service name at 15 characters; "badgeline-agent" is exactly 15.
AGENT_SERVICE_TYPE = "_badgeline-agent._tcp.local."
COORDINATOR_SERVICE_TYPE = "_badgeline._tcp.local."

# TXT keys, shared by the advertisers and the browsers.
TXT_PRINTER_ID = "printer_id"
TXT_MODEL = "model"
TXT_VERSION = "version"
TXT_STATUS_PORT = "status_port"
TXT_VENUE = "venue"
TXT_API_PATH = "api"
TXT_SCHEME = "scheme"  # http or https: how to talk to the coordinator at that address

# DNS wire constants (RFC 1035 / RFC 2782), for the queries badgeline sends itself.
DNS_FLAGS_QUERY = 0x0000
DNS_TYPE_PTR = 12
DNS_TYPE_SRV = 33
DNS_CLASS_IN = 1

_LABEL_UNSAFE = re.compile(r"[^a-z0-9-]+")


@dataclass(frozen=True)
class DiscoveryTiming:
    """How often discovery talks on the network. Tests shorten every field.

    The defaults follow RFC 6762's spirit: a venue's Wi-Fi carries many Pis,
    so nothing here queries more often than every few seconds in production.
    """

    # python-zeroconf's browser starts re-querying at this interval and backs off from it.
    browse_interval_ms: int = 10_000
    # How long one resolve (SRV + TXT + A) may take before we give up on it.
    resolve_timeout_ms: int = 3_000
    # The coordinator re-asks each known agent this often, so last_seen stays
    # meaningful for a Pi that lost power (it sends no goodbye).
    liveness_probe_interval_s: float = 30.0
    # An agent unheard for this long is reported stale (but kept: it may come back).
    stale_after_s: float = 95.0


DEFAULT_TIMING = DiscoveryTiming()


def host_label(text: str) -> str:
    """A DNS host label from free text: lower case, [a-z0-9-], at most 63 bytes."""
    label = _LABEL_UNSAFE.sub("-", text.lower()).strip("-")
    return (label or "unnamed")[:63]


def instance_name(text: str, service_type: str) -> str:
    """A service instance name; instance labels may hold any UTF-8 but no dots here."""
    label = text.replace(".", "-")[:63] or "unnamed"
    return f"{label}.{service_type}"


def open_zeroconf(interfaces: Sequence[str] | None) -> AsyncZeroconf:
    """An IPv4-only zeroconf on the given interface addresses (None: all of them).

    IPv4 only because IPv6 on loopback logs errors and venue Wi-Fi rarely has
    usable IPv6 multicast; restrict to the interfaces you mean (`mdns_interfaces`,
    docs/config.md).
    """
    chosen: list[str] | InterfaceChoice = (
        list(interfaces) if interfaces is not None else InterfaceChoice.All
    )
    return AsyncZeroconf(interfaces=chosen, ip_version=IPVersion.V4Only)


def local_ipv4_addresses(interfaces: Sequence[str] | None) -> list[str]:
    """Addresses to put in our A records: the chosen ones, or every non-loopback IPv4.

    Falls back to loopback only when the host has nothing else (a Pi before its
    Wi-Fi came up), so the advert is still valid and gets updated later.
    """
    if interfaces is not None:
        return list(interfaces)
    found: list[str] = []
    for adapter in ifaddr.get_adapters():
        for ip in adapter.ips:
            if isinstance(ip.ip, str) and not ip.ip.startswith("127."):
                found.append(ip.ip)
    return sorted(set(found)) or ["127.0.0.1"]
