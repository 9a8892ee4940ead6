"""Field-install fixtures: mDNS peers in their own processes, loopback only."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import sys
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from badgeline.discovery import DiscoveryTiming

# mDNS works on this machine's loopback; tests never touch a real network.
LOOPBACK = ["127.0.0.1"]

# Sub-second timing so goodbyes, moves and silence show up within a test.
FAST = DiscoveryTiming(
    browse_interval_ms=500,
    resolve_timeout_ms=1_000,
    liveness_probe_interval_s=0.5,
    stale_after_s=2.0,
)


def unique(prefix: str) -> str:
    """Names no other test (or leftover cache entry) uses."""
    return f"{prefix}{secrets.token_hex(4)}"


class MdnsPeer:
    """`python -m badgeline.discovery advertise-*` running in a child process."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    async def read_line(self, expected: str, timeout_s: float = 30.0) -> str:
        assert self.process.stdout is not None
        while True:
            raw = await asyncio.wait_for(self.process.stdout.readline(), timeout_s)
            if not raw:
                raise AssertionError(f"peer exited before printing {expected!r}")
            line = raw.decode().strip()
            if line.startswith(expected):
                return line

    async def move(self, address: str, port: int) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(f"move {address} {port}\n".encode())
        await self.process.stdin.drain()
        await self.read_line("moved")

    async def say_goodbye(self) -> None:
        self.process.terminate()
        await self.read_line("goodbye")
        await asyncio.wait_for(self.process.wait(), 10)

    async def vanish(self) -> None:
        """A Pi pulled from the wall: no goodbye at all."""
        self.process.kill()
        await self.process.wait()


PeerFactory = Callable[..., Awaitable[MdnsPeer]]


@pytest.fixture
async def mdns_peer() -> AsyncIterator[PeerFactory]:
    peers: list[MdnsPeer] = []

    async def start(*args: str) -> MdnsPeer:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "badgeline.discovery", "--interface", LOOPBACK[0], *args,
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
