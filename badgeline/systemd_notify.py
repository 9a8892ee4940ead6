"""sd_notify(3) without libsystemd: READY, WATCHDOG and STOPPING for Type=notify units.

A Pi image should not need python-systemd (a C extension) for three datagrams.
Every call is a no-op outside systemd (no `$NOTIFY_SOCKET`), so the same code
runs in tests, the demo and a terminal.

The watchdog is pinged from a task on the service's own event loop: if a
blocking call wedges the loop, the pings stop, and systemd kills and restarts
the service after WatchdogSec. A thread would keep pinging a dead loop.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Callable

log = logging.getLogger(__name__)


def _socket_address(raw: str) -> str | bytes:
    # A leading "@" names a socket in Linux's abstract namespace (a NUL byte).
    if raw.startswith("@"):
        return b"\0" + raw[1:].encode()
    return raw


def notify(state: str) -> bool:
    """Send one sd_notify message (e.g. "READY=1"); False when not under systemd."""
    raw = os.environ.get("NOTIFY_SOCKET")
    if not raw:
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.connect(_socket_address(raw))
            sock.sendall(state.encode())
    except OSError as error:
        # Never crash the service over a notification; systemd will notice the silence.
        log.warning("sd_notify %r to %s failed: %s", state, raw, error)
        return False
    return True


def notify_ready(status: str | None = None) -> bool:
    """Tell systemd start-up is complete: call once the service is actually serving."""
    return notify("READY=1" + (f"\nSTATUS={status}" if status else ""))


def notify_status(status: str) -> bool:
    """Free-form text shown by `systemctl status`."""
    return notify(f"STATUS={status}")


def notify_watchdog() -> bool:
    return notify("WATCHDOG=1")


def notify_stopping() -> bool:
    return notify("STOPPING=1")


def watchdog_interval() -> float | None:
    """Seconds between pings (half of WatchdogSec), or None when no watchdog is set.

    systemd sets WATCHDOG_PID too; when it names another process (a parent
    that forked us) the watchdog is not ours to feed.
    """
    usec = os.environ.get("WATCHDOG_USEC")
    if not usec:
        return None
    pid = os.environ.get("WATCHDOG_PID")
    if pid and pid.isdigit() and int(pid) != os.getpid():
        return None
    try:
        microseconds = int(usec)
    except ValueError:
        return None
    if microseconds <= 0:
        return None
    return microseconds / 2 / 1_000_000


async def watchdog_loop(
    interval_s: float | None = None, healthy: Callable[[], bool] = lambda: True
) -> None:
    """Ping the watchdog forever from this event loop while `healthy()`; returns at once
    if none is set. A service that is not healthy goes unfed: systemd restarts it.

    Run it as a task next to the service and cancel it on shutdown.
    """
    interval = interval_s if interval_s is not None else watchdog_interval()
    if interval is None:
        return
    while True:
        if healthy():
            notify_watchdog()
        await asyncio.sleep(interval)
