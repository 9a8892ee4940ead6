"""The agent on mDNS, across processes on 127.0.0.1: its advert and goodbye, finding the
coordinator with no URL configured, and following the coordinator when it moves."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from redis.asyncio import Redis

from badgeline.coordinator.config import CoordinatorSettings
from badgeline.discovery import AgentBrowser
from badgeline.emulator import PrinterEmulator
from tests.agent.agent_process import (
    LOOPBACK,
    AgentProcess,
    accepting,
    emulator_table,
    unique_printer_id,
    unique_venue,
    write_agent_toml,
)
from tests.agent.conftest import Kiosk, LiveCoordinator, agent_settings
from tests.conftest import agent_token
from tests.field.conftest import FAST, MdnsPeer
from tests.helpers import wait_for

# mDNS on loopback is one network for every test process: these run one at a time.
pytestmark = pytest.mark.xdist_group("mdns")

Advertise = Callable[[str, int], Awaitable[MdnsPeer]]


@pytest.fixture
async def advertise_coordinator() -> AsyncIterator[Advertise]:
    """`python -m badgeline.discovery advertise-coordinator` in its own process, on loopback."""
    peers: list[MdnsPeer] = []

    async def start(venue: str, port: int) -> MdnsPeer:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "badgeline.discovery", "--interface", LOOPBACK[0],
            "advertise-coordinator", "--venue", venue, "--port", str(port),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        peer = MdnsPeer(process)
        peers.append(peer)
        await peer.read_line("ready")
        return peer

    yield start
    for peer in peers:
        if peer.process.returncode is None:
            peer.process.kill()
            with contextlib.suppress(ProcessLookupError):
                await peer.process.wait()


async def test_a_running_agent_is_advertised_with_its_txt_and_says_goodbye_on_sigterm(
    start_emulator: Any, tmp_path: Path
) -> None:
    # GIVEN `badgeline agent` running as its own process, mDNS on loopback, and a
    # coordinator URL nobody answers at (advertising must not depend on it)
    emulator: PrinterEmulator = await start_emulator()
    printer_id = unique_printer_id()
    config = write_agent_toml(
        tmp_path / "agent.toml", emulator_table(emulator), printer_id=printer_id,
        coordinator_url="http://127.0.0.1:9", token=agent_token(printer_id),
        state_dir=tmp_path / "state", status_port=0, mdns_interfaces=LOOPBACK,
        escpos_profile="TM-T20II",
    )  # fmt: skip
    agent = await AgentProcess(config).start()
    try:
        async with AgentBrowser(interfaces=LOOPBACK, timing=FAST) as browser:

            async def seen() -> Any:
                return browser.get(printer_id)

            # WHEN the coordinator side browses
            found = await wait_for(seen, timeout_s=20)
            # THEN it sees the agent with its TXT, pointing at the live status endpoint
            assert found.txt == {"printer_id": printer_id, "model": "TM-T20II",
                                 "version": "0.1.0", "status_port": str(found.port)}  # fmt: skip
            assert found.address == "127.0.0.1" and found.port > 0
            async with (
                aiohttp.ClientSession() as session,
                session.get(found.status_url + "/healthz") as response,
            ):
                assert response.status == 200
            # WHEN the agent gets SIGTERM
            assert await agent.terminate() == 0, agent.tail()

            # THEN its goodbye removes it at once, not at the records' 75-minute TTL
            async def gone() -> bool:
                return browser.get(printer_id) is None

            await wait_for(gone, timeout_s=5)
    finally:
        await agent.kill()
    events = [line.get("event") for line in agent.events()]
    assert "mdns_advertised" in events and "agent_stopped" in events


async def test_without_a_coordinator_url_the_agent_finds_it_by_mdns_and_prints(
    settings: CoordinatorSettings, redis: Redis, start_emulator: Any, run_agent: Any,
    advertise_coordinator: Advertise, badge_ref: str, tmp_path: Path,
) -> None:  # fmt: skip
    # GIVEN a coordinator advertised on loopback for our venue, and another venue's beside it
    printer_id, venue = unique_printer_id(), unique_venue()
    coordinator = LiveCoordinator(accepting(settings, printer_id), redis)
    await coordinator.start()
    emulator: PrinterEmulator = await start_emulator()
    try:
        await advertise_coordinator(unique_venue(), 9)  # nothing listens there
        await advertise_coordinator(venue, coordinator.port)
        # WHEN an agent starts with no coordinator_url, only its venue
        agent = await run_agent(_mdns_agent(printer_id, venue, coordinator, emulator, tmp_path))
        # THEN it finds our coordinator, and a job for its printer prints
        await wait_for(lambda: _talks_to(agent, coordinator.url), timeout_s=20)
        async with aiohttp.ClientSession() as session:
            kiosk = Kiosk(coordinator, session)
            job_id = await kiosk.submit(badge_ref, printer_id)
            await wait_for(lambda: _state_is(kiosk, job_id, "printed"), timeout_s=20)
        assert [badge.job_id for badge in emulator.printed] == [job_id]
        # AND its status endpoint says where the coordinator came from, and its own advert
        await wait_for(lambda: _advertised(agent), timeout_s=10)
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"http://127.0.0.1:{agent.status_port}/status") as response,
        ):
            status = await response.json()
        assert status["coordinator"]["url"] == coordinator.url
        assert status["coordinator"]["source"] == "mdns" and status["coordinator"]["venue"] == venue
        assert status["mdns"]["advertised"] is True and status["mdns"]["addresses"] == LOOPBACK
        assert status["mdns"]["name"] == f"{printer_id}._badgeline-agent._tcp.local."
    finally:
        await coordinator.stop()


async def test_the_agent_follows_a_coordinator_that_moves(
    settings: CoordinatorSettings, redis: Redis, start_emulator: Any, run_agent: Any,
    advertise_coordinator: Advertise, badge_ref: str, tmp_path: Path,
) -> None:  # fmt: skip
    # GIVEN an agent that found its venue's coordinator by mDNS and printed a job there
    printer_id, venue = unique_printer_id(), unique_venue()
    coordinator_settings = accepting(settings, printer_id)
    first = LiveCoordinator(coordinator_settings, redis)
    second = LiveCoordinator(coordinator_settings, redis)
    await first.start()
    emulator: PrinterEmulator = await start_emulator()
    try:
        first_advert = await advertise_coordinator(venue, first.port)
        agent = await run_agent(_mdns_agent(printer_id, venue, first, emulator, tmp_path))
        async with aiohttp.ClientSession() as session:
            before = await Kiosk(first, session).submit(badge_ref, printer_id)
            await emulator.wait_until(lambda e: len(e.printed) == 1, timeout=20)
            # WHEN that coordinator stops (saying goodbye) and another starts on another
            # port, advertising the same venue (the spare laptop takes over)
            await first.stop()
            await first_advert.say_goodbye()
            await second.start()
            assert second.port != first.port
            await advertise_coordinator(venue, second.port)
            # THEN the agent moves to it, and the next job prints
            await wait_for(lambda: _talks_to(agent, second.url), timeout_s=20)
            kiosk = Kiosk(second, session)
            after = await kiosk.submit(badge_ref, printer_id)
            await wait_for(lambda: _state_is(kiosk, after, "printed"), timeout_s=20)
            assert await kiosk.state(before) == "printed"  # its ack reached one of them
        assert [badge.job_id for badge in emulator.printed] == [before, after]
    finally:
        await first.stop()
        await second.stop()


def _mdns_agent(printer_id: str, venue: str, coordinator: LiveCoordinator,
                emulator: PrinterEmulator, tmp_path: Path) -> Any:  # fmt: skip
    return agent_settings(
        printer_id, coordinator, emulator, tmp_path / printer_id, coordinator_url=None,
        venue=venue, mdns=True, mdns_interfaces=LOOPBACK,
    )  # fmt: skip


async def _advertised(agent: Any) -> bool:
    return bool(agent.mdns is not None and agent.mdns.advertised)


async def _talks_to(agent: Any, url: str) -> bool:
    return bool(agent.client.base_url == url and agent.client.reachable)


async def _state_is(kiosk: Kiosk, job_id: str, state: str) -> bool:
    return await kiosk.state(job_id) == state
