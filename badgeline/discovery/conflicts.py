"""Keeping a coordinator's mDNS instance name unique, before and after it is announced.

Two coordinators given one venue name (a spare laptop started next to the main
one, a copied config) must not kill each other: the one that loses a conflict
takes the next name and carries on serving. A conflict shows up two ways:

- while probing (python-zeroconf's NonUniqueNameException), when the other's
  records were already in our cache: we take the next name;
- after we announced, when another host's SRV record for our name arrives: an
  answer that came too late for the probes (a loaded host answers in seconds,
  not the 250 ms the probe waits), or a host that announced without probing.
  Then both sides see the clash, and exactly one gives way: as in RFC 6762 §8.2,
  the lexicographically later record data wins (port first, then target host).

Nothing here depends on a peer answering in time: after registering we ask for
our own name once, so a peer that is slow to answer is heard whenever it does.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Iterator

from zeroconf import (
    DNSOutgoing,
    DNSQuestion,
    DNSService,
    RecordUpdate,
    RecordUpdateListener,
    current_time_millis,
)
from zeroconf import Zeroconf as SyncZeroconf
from zeroconf.asyncio import AsyncServiceInfo

_TYPE_SRV = 33  # RFC 2782
_CLASS_IN = 1
_FLAGS_QUERY = 0x0000
_FLAGS_AUTHORITATIVE_RESPONSE = 0x8400  # QR + AA

# A venue with more coordinators than this under one name is a configuration to fix.
MAX_INSTANCE_NAMES = 10
GOODBYE_REPEATS_S = (1.0, 3.0)


def instance_candidates(base: str, machine: str) -> Iterator[str]:
    """`base`, then `base (machine)`, `base (machine 2)`, …: a reader sees which host took which."""
    yield base
    yield f"{base} ({machine})"
    for number in itertools.count(2):
        yield f"{base} ({machine} {number})"


def _srv_data(port: int, server: str) -> tuple[int, str]:
    return port, server.lower()


def loses_to(ours: AsyncServiceInfo, rival: DNSService) -> bool:
    """Whether we give the name up: the other record's data is lexicographically later."""
    return _srv_data(ours.port or 0, ours.server or "") < _srv_data(rival.port, rival.server)


def rivals_in_cache(zeroconf: SyncZeroconf, ours: AsyncServiceInfo) -> list[DNSService]:
    """SRV records of other hosts for our instance name that we have heard already."""
    now = current_time_millis()
    cached = zeroconf.cache.get_all_by_details(ours.name, _TYPE_SRV, _CLASS_IN)
    return [
        record
        for record in cached
        if isinstance(record, DNSService) and not record.is_expired(now) and _is_rival(record, ours)
    ]


def _is_rival(record: DNSService, ours: AsyncServiceInfo) -> bool:
    if record.ttl == 0 or record.name.lower() != ours.name.lower():
        return False  # a goodbye, or another name
    return _srv_data(record.port, record.server) != _srv_data(ours.port or 0, ours.server or "")


def ask_for(zeroconf: SyncZeroconf, ours: AsyncServiceInfo) -> None:
    """Ask the network who else holds our name; answers reach the NameGuard."""
    query = DNSOutgoing(_FLAGS_QUERY)
    query.add_question(DNSQuestion(ours.name, _TYPE_SRV, _CLASS_IN))
    zeroconf.async_send(query)


def send_srv_goodbye(zeroconf: SyncZeroconf, ours: AsyncServiceInfo) -> None:
    """Withdraw our SRV record only: the PTR, TXT and address records of a name we
    give up may be identical to the winner's, and a goodbye for those would make
    every cache drop the winner's too.

    Sent again later: python-zeroconf queues multicast answers for up to about a
    second with the records of the moment, so an answer queued before we gave the
    name up can still go out after the first goodbye.
    """
    goodbye = DNSOutgoing(_FLAGS_AUTHORITATIVE_RESPONSE)
    goodbye.add_answer_at_time(ours.dns_service(override_ttl=0), 0)
    zeroconf.async_send(goodbye)
    loop = asyncio.get_running_loop()
    for delay_s in GOODBYE_REPEATS_S:
        loop.call_later(delay_s, zeroconf.async_send, goodbye)  # a no-op once closed


class NameGuard(RecordUpdateListener):
    """Calls `on_rival` (on the event loop) when another host's SRV for our name arrives."""

    def __init__(self, on_rival: Callable[[DNSService], None]) -> None:
        self._on_rival = on_rival
        self._ours: AsyncServiceInfo | None = None

    def watch(self, ours: AsyncServiceInfo) -> None:
        self._ours = ours

    def async_update_records(
        self, zc: SyncZeroconf, now: float, records: list[RecordUpdate]
    ) -> None:
        ours = self._ours
        if ours is None:
            return
        for update in records:
            record = update.new
            if isinstance(record, DNSService) and _is_rival(record, ours):
                self._on_rival(record)

    def async_update_records_complete(self) -> None:
        return None
