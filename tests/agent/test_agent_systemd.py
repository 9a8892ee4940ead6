"""The agent as systemd sees it (Type=notify): READY=1 once it serves, WATCHDOG=1 from its
event loop, STOPPING=1 on SIGTERM; over a real AF_UNIX datagram socket the test owns."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from badgeline.coordinator.store.embedded import free_port
from badgeline.emulator import PrinterEmulator
from tests.agent.agent_process import AgentProcess, emulator_table, write_agent_toml
from tests.agent.conftest import LiveCoordinator
from tests.conftest import agent_token


@pytest.fixture
def notify_socket(tmp_path: Path) -> Iterator[tuple[socket.socket, str]]:
    """A bound datagram socket standing in for systemd's, and its $NOTIFY_SOCKET value."""
    path = tmp_path / "notify.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.setblocking(False)
    yield sock, str(path)
    sock.close()


async def _until_seen(
    sock: socket.socket, wanted: str, seen: list[str], timeout_s: float, times: int = 1
) -> None:
    """Read datagrams into `seen` (one entry per line) until `wanted` came `times` times."""
    loop = asyncio.get_running_loop()
    deadline = time.monotonic() + timeout_s
    while seen.count(wanted) < times:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(f"{wanted} x{times} not received within {timeout_s}s: {seen}")
        try:
            datagram = await asyncio.wait_for(loop.sock_recv(sock, 4096), remaining)
        except TimeoutError:
            continue
        seen.extend(datagram.decode().splitlines())


async def test_the_agent_notifies_ready_pings_the_watchdog_and_says_stopping_on_sigterm(
    coordinator: LiveCoordinator, start_emulator: Any, tmp_path: Path,
    notify_socket: tuple[socket.socket, str],
) -> None:  # fmt: skip
    # GIVEN `badgeline agent` started the way systemd starts it, with a 0.4 s watchdog
    sock, address = notify_socket
    emulator: PrinterEmulator = await start_emulator()
    status_port = free_port()
    config = write_agent_toml(
        tmp_path / "agent.toml", emulator_table(emulator), printer_id="printer-a",
        coordinator_url=coordinator.url, token=agent_token("printer-a"),
        state_dir=tmp_path / "state", status_port=status_port, mdns=False,
    )  # fmt: skip
    env = dict(os.environ, NOTIFY_SOCKET=address, WATCHDOG_USEC="400000")
    env.pop("WATCHDOG_PID", None)
    agent = await AgentProcess(config, env).start()
    seen: list[str] = []
    try:
        # THEN it says READY=1, and by then its status endpoint answers with its loops running
        await _until_seen(sock, "READY=1", seen, timeout_s=30)
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"http://127.0.0.1:{status_port}/healthz") as response,
        ):
            assert response.status == 200, await response.text()
        assert any(line.startswith("STATUS=printer-a: coordinator http") for line in seen)
        # AND it keeps pinging the watchdog (every 0.2 s: half of WatchdogSec)
        await _until_seen(sock, "WATCHDOG=1", seen, timeout_s=10, times=3)
        # WHEN systemd stops it
        assert agent.process is not None
        agent.process.send_signal(signal.SIGTERM)
        # THEN it says STOPPING=1 and exits cleanly
        await _until_seen(sock, "STOPPING=1", seen, timeout_s=20)
        assert await agent.terminate() == 0, agent.tail()
    finally:
        await agent.kill()
    assert seen.count("READY=1") == 1


async def test_an_agent_waiting_to_enrol_keeps_systemd_waiting_and_stops_on_sigterm(
    start_emulator: Any, tmp_path: Path, notify_socket: tuple[socket.socket, str]
) -> None:
    # GIVEN an agent with an enrolment code and a coordinator that is not up yet
    sock, address = notify_socket
    emulator: PrinterEmulator = await start_emulator()
    config = write_agent_toml(
        tmp_path / "agent.toml", emulator_table(emulator), printer_id="printer-a",
        coordinator_url=f"http://127.0.0.1:{free_port()}",
        enrolment_code="Q7xK-2pLm_9vRt4WzYb8nC3d", state_dir=tmp_path / "state",
        status_port=0, mdns=False, retry_initial_s=0.05, retry_max_s=0.2,
    )  # fmt: skip
    env = dict(os.environ, NOTIFY_SOCKET=address, WATCHDOG_USEC="400000")
    env.pop("WATCHDOG_PID", None)
    agent = await AgentProcess(config, env).start()
    seen: list[str] = []
    try:
        # THEN it pushes systemd's start timeout back and feeds the watchdog, not READY
        await _until_seen(sock, "WATCHDOG=1", seen, timeout_s=30, times=2)
        assert any(line.startswith("EXTEND_TIMEOUT_USEC=") for line in seen)
        assert "READY=1" not in seen
        # AND SIGTERM while it waits is a clean stop, with no token written
        assert await agent.terminate() == 0, agent.tail()
    finally:
        await agent.kill()
    assert not (tmp_path / "state" / "agent-token.json").exists()
