"""Agents finding the coordinator by mDNS, and following it when it moves."""

from __future__ import annotations

import asyncio
import shutil
import socket
from pathlib import Path
from typing import Any

import pytest
from zeroconf import DNSIncoming
from zeroconf.asyncio import AsyncServiceInfo

from badgeline.coordinator.store.embedded import EmbeddedRedis
from badgeline.discovery import (
    COORDINATOR_SERVICE_TYPE,
    CoordinatorFollower,
    CoordinatorLocation,
    CoordinatorNotFound,
    find_coordinator,
    open_zeroconf,
)
from badgeline.discovery.names import DNS_TYPE_PTR, host_label
from tests.field.conftest import FAST, LOOPBACK, PeerFactory, unique
from tests.helpers import wait_for
from tests.security.conftest import http_status, running_coordinator

# mDNS on loopback is one network for every test process: these run one at a time.
pytestmark = pytest.mark.xdist_group("mdns")


async def test_find_coordinator_returns_the_advertised_api(mdns_peer: PeerFactory) -> None:
    # GIVEN a coordinator advertising its venue from another process
    venue = unique("hall")
    await mdns_peer("advertise-coordinator", "--venue", venue, "--port", "18420")
    # WHEN an agent with no URL configured looks for it
    location = await find_coordinator(10, venue=venue, interfaces=LOOPBACK, timing=FAST)
    # THEN it gets the coordinator's address, port and API path
    assert (location.address, location.port, location.venue) == ("127.0.0.1", 18420, venue)
    assert location.api_url == "http://127.0.0.1:18420/v1"
    assert location.version == "0.1.0"


async def test_find_coordinator_gives_up_after_its_timeout() -> None:
    # GIVEN no coordinator for this venue anywhere
    venue = unique("nowhere")
    # WHEN an agent looks for one THEN it fails with a message naming the venue
    with pytest.raises(CoordinatorNotFound, match=venue):
        await find_coordinator(1.5, venue=venue, interfaces=LOOPBACK, timing=FAST)


class _QuestionTap(asyncio.DatagramProtocol):
    """A socket on the mDNS port of 127.0.0.1 noting every question for the coordinator's
    PTR as it passes, True for those asking for a unicast answer (QU)."""

    def __init__(self) -> None:
        self.asked_unicast: list[bool] = []

    def datagram_received(self, data: bytes, addr: tuple[str | Any, int]) -> None:
        message = DNSIncoming(data)
        if message.is_query():
            self.asked_unicast += [
                question.unicast for question in message.questions
                if question.name == COORDINATOR_SERVICE_TYPE and question.type == DNS_TYPE_PTR
            ]  # fmt: skip


async def test_unanswered_the_follower_asks_again_for_a_multicast_answer_at_once() -> None:
    """python-zeroconf's browser asks first for a unicast answer, then again 1 s and 5 s
    later. A unicast answer can reach another socket on port 5353 (avahi-daemon beside
    the agent on a Pi), so the follower asks for a multicast answer itself soon after."""
    tap = _QuestionTap()
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(("", 5353))
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
                    socket.inet_aton("224.0.0.251") + socket.inet_aton(LOOPBACK[0]))  # fmt: skip
    transport, _ = await asyncio.get_running_loop().create_datagram_endpoint(lambda: tap, sock=sock)
    try:
        # GIVEN no coordinator for this venue anywhere, so nothing answers
        async with CoordinatorFollower(venue=unique("silent"), interfaces=LOOPBACK, timing=FAST):
            # THEN a third question goes out well before the browser's own third (5 s
            # after its first), and the follower's own asks for a multicast answer
            async def asked_three_times() -> bool:
                return len(tap.asked_unicast) >= 3

            await wait_for(asked_three_times, timeout_s=4)
        assert tap.asked_unicast[0] is True  # the browser's first question, QU
        assert tap.asked_unicast[1] is False  # ours, QM
    finally:
        transport.close()


async def test_a_coordinator_of_another_venue_is_ignored(mdns_peer: PeerFactory) -> None:
    # GIVEN two coordinators on one network (two halls)
    ours, theirs = unique("ours"), unique("theirs")
    await mdns_peer("advertise-coordinator", "--venue", theirs, "--port", "18430")
    await mdns_peer("advertise-coordinator", "--venue", ours, "--port", "18431")
    # WHEN an agent of our venue looks THEN it finds ours only
    location = await find_coordinator(10, venue=ours, interfaces=LOOPBACK, timing=FAST)
    assert (location.venue, location.port) == (ours, 18431)


async def test_the_follower_follows_a_coordinator_that_changes_address(
    mdns_peer: PeerFactory,
) -> None:
    # GIVEN an agent following a coordinator at 127.0.0.1:18440
    venue = unique("hall")
    peer = await mdns_peer("advertise-coordinator", "--venue", venue, "--port", "18440")
    changes: list[CoordinatorLocation] = []
    async with CoordinatorFollower(
        venue=venue, interfaces=LOOPBACK, timing=FAST, on_change=changes.append
    ) as follower:
        first = await follower.wait_for_location(10)
        assert first.base_url == "http://127.0.0.1:18440"
        # WHEN the coordinator's laptop gets a new lease and re-announces
        await peer.move("127.0.0.7", 18441)
        # THEN the agent switches to the new address without a restart
        moved = await follower.wait_for_location(10, other_than=first)
        assert moved.base_url == "http://127.0.0.7:18441"
        assert [c.base_url for c in changes] == [first.base_url, moved.base_url]
        assert follower.present


async def test_the_follower_follows_a_coordinator_replaced_by_another_host(
    mdns_peer: PeerFactory,
) -> None:
    # GIVEN an agent following a coordinator
    venue = unique("hall")
    old = await mdns_peer("advertise-coordinator", "--venue", venue, "--port", "18450")
    async with CoordinatorFollower(venue=venue, interfaces=LOOPBACK, timing=FAST) as follower:
        first = await follower.wait_for_location(10)
        # WHEN it shuts down cleanly and the spare laptop takes over elsewhere
        await old.say_goodbye()
        await mdns_peer(
            "advertise-coordinator", "--venue", venue, "--port", "18451",
            "--address", "127.0.0.8",
        )  # fmt: skip
        # THEN the agent follows the spare
        spare = await follower.wait_for_location(10, other_than=first)
        assert spare.base_url == "http://127.0.0.8:18451"
        assert follower.present


async def test_after_a_goodbye_the_last_address_is_kept_but_marked_absent(
    mdns_peer: PeerFactory,
) -> None:
    # GIVEN an agent following a coordinator
    venue = unique("hall")
    peer = await mdns_peer("advertise-coordinator", "--venue", venue, "--port", "18460")
    async with CoordinatorFollower(venue=venue, interfaces=LOOPBACK, timing=FAST) as follower:
        first = await follower.wait_for_location(10)
        # WHEN the coordinator says goodbye (most likely a restart)
        await peer.say_goodbye()

        async def absent() -> bool:
            return not follower.present

        await wait_for(absent, timeout_s=5)
        # THEN the agent keeps the last address to retry against
        assert follower.location == first


async def test_an_independent_dns_implementation_reads_the_agent_advert(
    mdns_peer: PeerFactory,
) -> None:
    """dig (ISC BIND) sends a legacy unicast mDNS query (RFC 6762 §6.7) and decodes the answer.

    Avahi's browser needs a running avahi-daemon and D-Bus, which CI does not have.
    """
    dig = shutil.which("dig")
    assert dig, "dig is missing: apt-get install -y bind9-dnsutils"
    # GIVEN an agent advertising from its own process
    printer_id = unique("printer-")
    await mdns_peer("advertise-agent", "--printer-id", printer_id, "--status-port", "18470")
    # WHEN dig asks the mDNS port for badgeline agents
    process = await asyncio.create_subprocess_exec(
        dig, "@127.0.0.1", "-p", "5353", "+time=3", "+tries=2", "+noall", "+answer",
        "+additional", "_badgeline-agent._tcp.local", "PTR", stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    stdout, _ = await asyncio.wait_for(process.communicate(), 20)
    assert process.returncode == 0
    # THEN it reads the PTR, SRV, TXT and A records we documented
    records = {" ".join(line.split()) for line in stdout.decode().splitlines()}
    instance = f"{printer_id}._badgeline-agent._tcp.local."
    host = f"badgeline-agent-{printer_id}.local."
    assert f"_badgeline-agent._tcp.local. 4500 IN PTR {instance}" in records
    assert f"{instance} 120 IN SRV 0 0 18470 {host}" in records
    assert f"{host} 120 IN A 127.0.0.1" in records
    assert (
        f'{instance} 4500 IN TXT "printer_id={printer_id}" "model=unknown" '
        '"version=0.1.0" "status_port=18470"'
    ) in records


class CoordinatorAdverts:
    """Resolves coordinator instance names afresh on each look, from one responder.

    By name rather than by browsing: a browser that misses an announcement (its
    first, unicast-answered query can land on another process's port-5353 socket
    on a shared loopback) re-asks only after a growing back-off.
    """

    def __init__(self, venue: str) -> None:
        base = f"badgeline coordinator {venue}"
        machine = host_label(socket.gethostname())
        self.names = [base, f"{base} ({machine})", f"{base} ({machine} 2)"]
        self.venue = venue
        self._zeroconf = open_zeroconf(LOOPBACK)

    async def ports(self) -> dict[str, int]:
        """Instance label -> port, for the names some host answers for now."""
        adverts: dict[str, int] = {}
        for label in self.names:
            info = AsyncServiceInfo(COORDINATOR_SERVICE_TYPE, f"{label}.{COORDINATOR_SERVICE_TYPE}")
            resolved = await info.async_request(self._zeroconf.zeroconf, 500)
            if resolved and info.port and info.decoded_properties.get("venue") == self.venue:
                adverts[label] = info.port
        return adverts

    async def close(self) -> None:
        await self._zeroconf.async_close()


async def test_a_coordinator_whose_venue_name_is_taken_renames_itself_and_keeps_serving(
    mdns_peer: PeerFactory, tmp_path: Path, redis_server: EmbeddedRedis
) -> None:
    # GIVEN a coordinator of venue V advertising from another process, and browseable
    # (its advertised port is above any free port, so it also wins the tie-break)
    venue = unique("hall")
    await mdns_peer("advertise-coordinator", "--venue", venue, "--port", "65432")
    first = await find_coordinator(15, venue=venue, interfaces=LOOPBACK, timing=FAST)
    heard = CoordinatorAdverts(venue)
    base, renamed_label, third_label = heard.names
    rival = open_zeroconf(LOOPBACK)
    try:
        # WHEN a real coordinator is started with the same venue name
        with running_coordinator(
            tmp_path, redis_server.url, venue, mdns=True, mdns_interfaces=LOOPBACK
        ) as live:
            port = int(live.url.rsplit(":", 1)[1])

            async def adverts_with(ports: list[int]) -> dict[str, int] | None:
                assert live.process.poll() is None, live.log()[-3000:]
                adverts = await heard.ports()
                return adverts if sorted(adverts.values()) == sorted(ports) else None

            # THEN it advertises under a name of its own; the first keeps its name
            adverts = await wait_for(lambda: adverts_with([port, 65432]), timeout_s=60)
            assert adverts == {base: 65432, renamed_label: port}
            renamed = f"{renamed_label}.{COORDINATOR_SERVICE_TYPE}"
            assert first.name == f"{base}.{COORDINATOR_SERVICE_TYPE}"

            # WHEN, once its announcement is done, another host announces that name
            # without probing (what a probe answered too late amounts to)
            async def announced() -> bool:
                return f"mDNS: advertising {renamed} at" in live.log()

            await wait_for(announced, timeout_s=30)
            claim = AsyncServiceInfo(
                COORDINATOR_SERVICE_TYPE, renamed, port=65433, server="rival-coordinator.local.",
                parsed_addresses=LOOPBACK, properties={"venue": venue},
            )  # fmt: skip
            await (await rival.async_register_service(claim, cooperating_responders=True))
            # THEN it gives way again, under a third name, and never stops serving
            adverts = await wait_for(lambda: adverts_with([port, 65432, 65433]), timeout_s=60)
            assert adverts == {base: 65432, renamed_label: 65433, third_label: port}
            assert http_status(live.url + "/healthz") == 200
            assert live.log().count("is taken by another coordinator") == 2
            assert "(announced by rival-coordinator.local.:65433)" in live.log()
    finally:
        await heard.close()
        await rival.async_close()
