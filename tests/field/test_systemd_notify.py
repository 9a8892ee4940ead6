"""sd_notify over a real AF_UNIX datagram socket that the test owns."""

from __future__ import annotations

import asyncio
import os
import secrets
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from badgeline import systemd_notify


def receive(sock: socket.socket, timeout_s: float = 5.0) -> str:
    sock.settimeout(timeout_s)
    return sock.recv(4096).decode()


@pytest.fixture
def notify_socket(tmp_path: Path) -> Iterator[tuple[socket.socket, str]]:
    """A bound datagram socket standing in for systemd's, and its $NOTIFY_SOCKET value."""
    path = tmp_path / "notify.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    yield sock, str(path)
    sock.close()


def test_ready_and_watchdog_reach_the_notify_socket(
    notify_socket: tuple[socket.socket, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a service started with NOTIFY_SOCKET pointing at our socket
    sock, address = notify_socket
    monkeypatch.setenv("NOTIFY_SOCKET", address)
    # WHEN it reports ready, pings the watchdog and begins to stop
    assert systemd_notify.notify_ready(status="serving on :8421")
    assert systemd_notify.notify_watchdog()
    assert systemd_notify.notify_stopping()
    # THEN systemd's side receives exactly those messages, in order
    assert receive(sock) == "READY=1\nSTATUS=serving on :8421"
    assert receive(sock) == "WATCHDOG=1"
    assert receive(sock) == "STOPPING=1"


def test_an_abstract_namespace_socket_is_supported(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN NOTIFY_SOCKET="@name" (how systemd names sockets in the abstract namespace)
    name = f"badgeline-test-{secrets.token_hex(6)}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(b"\0" + name.encode())
        monkeypatch.setenv("NOTIFY_SOCKET", "@" + name)
        # WHEN the service is ready THEN the abstract socket receives READY=1
        assert systemd_notify.notify_ready()
        assert receive(sock) == "READY=1"


def test_outside_systemd_every_call_is_a_harmless_no_op(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN no NOTIFY_SOCKET and no WATCHDOG_USEC (a terminal, a test, the demo)
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    monkeypatch.delenv("WATCHDOG_USEC", raising=False)
    # WHEN/THEN nothing is sent, nothing fails, and the watchdog loop returns at once
    assert not systemd_notify.notify_ready()
    assert systemd_notify.watchdog_interval() is None
    asyncio.run(asyncio.wait_for(systemd_notify.watchdog_loop(), 1))


def test_a_vanished_socket_does_not_crash_the_service(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN NOTIFY_SOCKET naming a socket nobody listens on
    monkeypatch.setenv("NOTIFY_SOCKET", str(tmp_path / "gone.sock"))
    # WHEN/THEN notifying reports failure instead of raising
    assert not systemd_notify.notify_watchdog()


def test_the_watchdog_interval_is_half_of_watchdog_sec(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN WatchdogSec=20 (systemd passes microseconds) for this process
    monkeypatch.setenv("WATCHDOG_USEC", "20000000")
    monkeypatch.setenv("WATCHDOG_PID", str(os.getpid()))
    assert systemd_notify.watchdog_interval() == 10.0
    # WHEN the watchdog belongs to another process THEN it is not ours to feed
    monkeypatch.setenv("WATCHDOG_PID", str(os.getpid() + 1))
    assert systemd_notify.watchdog_interval() is None


# A service whose event loop wedges after a while: the watchdog task lives on
# that loop, so the pings must stop while it is blocked.
WEDGING_SERVICE = textwrap.dedent(
    """
    import asyncio, time
    from badgeline import systemd_notify

    async def main():
        pinger = asyncio.ensure_future(systemd_notify.watchdog_loop())
        systemd_notify.notify_ready()
        await asyncio.sleep(1.0)
        systemd_notify.notify_status("wedging")
        time.sleep(2.0)  # a blocking call on the loop: the bug the watchdog exists for
        systemd_notify.notify_status("unwedged")
        pinger.cancel()

    asyncio.run(main())
    """
)


def collect(sock: socket.socket, until: str, timeout_s: float) -> list[tuple[float, str]]:
    """Messages with their arrival times, up to and including `until`."""
    received: list[tuple[float, str]] = []
    sock.settimeout(timeout_s)
    while True:
        message = sock.recv(4096).decode()
        received.append((time.monotonic(), message))
        if message == until:
            return received


def test_a_real_service_process_pings_from_its_loop_and_stops_when_wedged(
    notify_socket: tuple[socket.socket, str],
) -> None:
    # GIVEN a service process under a pretend systemd with WatchdogSec=0.4s
    sock, address = notify_socket
    env = dict(os.environ, NOTIFY_SOCKET=address, WATCHDOG_USEC="400000")
    env.pop("WATCHDOG_PID", None)
    process = subprocess.Popen([sys.executable, "-c", WEDGING_SERVICE], env=env)
    try:
        # WHEN it runs, wedges its loop for 2 s, then recovers
        messages = collect(sock, until="STATUS=unwedged", timeout_s=10)
    finally:
        process.wait(timeout=10)
    texts = [text for _, text in messages]
    # THEN it said READY=1 and pinged WATCHDOG=1 every 0.2 s while healthy
    assert "READY=1" in texts
    wedged_at = texts.index("STATUS=wedging")
    assert texts[:wedged_at].count("WATCHDOG=1") >= 3
    # AND not a single ping arrived while the loop was blocked
    assert texts[wedged_at + 1] == "STATUS=unwedged"
    assert messages[wedged_at + 1][0] - messages[wedged_at][0] >= 1.9
