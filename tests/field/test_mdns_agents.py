"""The coordinator's AgentBrowser against agents advertised by other processes."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from badgeline.discovery import AgentAdvertiser, AgentBrowser
from tests.field.conftest import FAST, LOOPBACK, PeerFactory, unique
from tests.helpers import wait_for

# mDNS on loopback is one network for every test process: these run one at a time.
pytestmark = pytest.mark.xdist_group("mdns")


async def test_an_agent_in_another_process_is_seen_with_its_address_port_and_txt(
    mdns_peer: PeerFactory,
) -> None:
    # GIVEN an agent advertising from its own process
    printer_id = unique("printer-")
    await mdns_peer(
        "advertise-agent", "--printer-id", printer_id, "--status-port", "18421",
        "--model", "TM-T20III",
    )  # fmt: skip
    # WHEN the coordinator browses
    async with AgentBrowser(interfaces=LOOPBACK, timing=FAST) as browser:

        async def seen() -> object:
            return browser.get(printer_id)

        agent = await wait_for(seen, timeout_s=10)
    # THEN it knows where the agent is and what it said about itself
    assert agent.address == "127.0.0.1"
    assert agent.port == 18421
    assert agent.txt == {
        "printer_id": printer_id,
        "model": "TM-T20III",
        "version": "0.1.0",
        "status_port": "18421",
    }
    assert agent.status_url == "http://127.0.0.1:18421"
    assert time.time() - agent.last_seen < 5
    shown = agent.to_json()
    assert shown["address"] == "127.0.0.1" and shown["model"] == "TM-T20III"
    assert str(shown["last_seen"]).endswith("+00:00")


async def test_a_clean_goodbye_removes_the_agent(mdns_peer: PeerFactory) -> None:
    # GIVEN a browser that sees an agent
    printer_id = unique("printer-")
    peer = await mdns_peer("advertise-agent", "--printer-id", printer_id)
    async with AgentBrowser(interfaces=LOOPBACK, timing=FAST) as browser:

        async def seen() -> bool:
            return browser.get(printer_id) is not None

        await wait_for(seen, timeout_s=10)
        # WHEN the agent shuts down cleanly
        await peer.say_goodbye()

        # THEN the browser drops it within seconds, not at the 75-minute TTL
        async def gone() -> bool:
            return browser.get(printer_id) is None

        await wait_for(gone, timeout_s=20)


async def test_an_agent_that_vanishes_without_goodbye_turns_stale_but_stays_listed(
    mdns_peer: PeerFactory,
) -> None:
    # GIVEN a browser that sees an agent whose last_seen keeps advancing
    printer_id = unique("printer-")
    peer = await mdns_peer("advertise-agent", "--printer-id", printer_id)
    async with AgentBrowser(interfaces=LOOPBACK, timing=FAST) as browser:

        async def seen() -> object:
            return browser.get(printer_id)

        first = await wait_for(seen, timeout_s=10)

        async def heard_again() -> bool:
            agent = browser.get(printer_id)
            return agent is not None and agent.last_seen > first.last_seen + 0.3

        await wait_for(heard_again, timeout_s=20)
        assert browser.stale_agents() == []
        # WHEN its power is cut (no goodbye)
        await peer.vanish()

        # THEN it is reported stale once it stops answering, and is still listed
        async def stale() -> bool:
            return any(a.printer_id == printer_id for a in browser.stale_agents())

        await wait_for(stale, timeout_s=FAST.stale_after_s + 5)
        assert browser.get(printer_id) is not None


async def test_an_agent_update_is_seen(mdns_peer: PeerFactory) -> None:
    # GIVEN an in-process agent advert and a browser in another "host" (process side)
    printer_id = unique("printer-")
    async with (
        AgentAdvertiser(printer_id, status_port=18500, interfaces=LOOPBACK) as advertiser,
        AgentBrowser(interfaces=LOOPBACK, timing=FAST) as browser,
    ):

        async def seen_on(port: int) -> bool:
            agent = browser.get(printer_id)
            return agent is not None and agent.port == port

        await wait_for(lambda: seen_on(18500), timeout_s=10)
        # WHEN the agent re-announces on another port and address
        await advertiser.update(addresses=["127.0.0.9"], port=18501)
        # THEN the browser follows
        await wait_for(lambda: seen_on(18501), timeout_s=10)
        agent = browser.get(printer_id)
        assert agent is not None and agent.address == "127.0.0.9"


def test_an_interface_name_instead_of_its_address_is_named_in_one_line() -> None:
    # GIVEN a tech who types the interface's name, as `ip link` shows it
    result = subprocess.run(
        [sys.executable, "-m", "badgeline.discovery", "--interface", "wlan0", "browse"],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )  # fmt: skip
    # THEN usage error, naming it, and no traceback
    assert result.returncode == 2
    assert "argument --interface: 'wlan0' is not an IPv4 address" in result.stderr
    assert "Traceback" not in result.stderr
