"""The coordinator as systemd and the agents see it: READY=1 once serving, a
watchdog fed from its event loop, and an mDNS advert agents can find."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from badgeline.coordinator.store.embedded import free_port
from badgeline.discovery.coordinator import find_coordinator

# mDNS on loopback is one network for every test process: these run one at a time.
pytestmark = pytest.mark.xdist_group("mdns")


def _datagrams(sock: socket.socket, wanted: set[str], timeout_s: float) -> set[str]:
    seen: set[str] = set()
    deadline = time.monotonic() + timeout_s
    while not wanted <= seen and time.monotonic() < deadline:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            seen.update(sock.recv(4096).decode().splitlines())
        except TimeoutError:
            break
    return seen


async def test_coordinator_notifies_systemd_and_advertises_itself(tmp_path: Path) -> None:
    # GIVEN a socket standing in for systemd's, and a coordinator started under it
    address = str(tmp_path / "notify.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(address)
    port = free_port()
    venue = f"svc{os.getpid()}"
    config = tmp_path / "coordinator.toml"
    config.write_text(f'venue = "{venue}"\nlisten_port = {port}\n'
                      f'state_dir = "{tmp_path / "state"}"\n')  # fmt: skip
    env = dict(os.environ, NOTIFY_SOCKET=address, WATCHDOG_USEC="400000")
    process = subprocess.Popen(
        [sys.executable, "-m", "badgeline.cli", "coordinator", "--config", str(config)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        # THEN it says READY=1 once serving and keeps pinging the watchdog
        seen = _datagrams(sock, {"READY=1", "WATCHDOG=1"}, timeout_s=30)
        assert {"READY=1", "WATCHDOG=1"} <= seen, seen
        # AND an agent on the same network finds it by mDNS, with its port
        location = await find_coordinator(15, venue=venue, interfaces=["127.0.0.1"])
        assert location.port == port
        # AND SIGTERM says STOPPING=1 and exits cleanly
        process.send_signal(signal.SIGTERM)
        assert "STOPPING=1" in _datagrams(sock, {"STOPPING=1"}, timeout_s=20)
        assert process.wait(20) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        sock.close()
