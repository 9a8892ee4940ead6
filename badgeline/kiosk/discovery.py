"""Finding the coordinator on mDNS, as agents do (badgeline.discovery), for a kiosk
given `discover=True`: the address it advertises goes first in the kiosk's list
of coordinator URLs, and a coordinator that moves (new address, the spare laptop)
is followed without a restart.

zeroconf is imported only here, only when discovery is asked for: a kiosk that
names its coordinator does not load it.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Sequence

from badgeline.kiosk.client import Replicas
from badgeline.kiosk.errors import KioskError
from badgeline.kiosk.events import kiosk_event


class MdnsDiscovery(threading.Thread):
    def __init__(self, replicas: Replicas, venue: str | None,
                 interfaces: Sequence[str] | None) -> None:  # fmt: skip
        super().__init__(name="badgeline-kiosk-mdns", daemon=True)
        try:
            from badgeline.discovery.coordinator import CoordinatorFollower
        except ImportError as error:
            raise KioskError(
                f"discover=True needs zeroconf ({error}): pip install 'badgeline[kiosk]'"
            ) from None
        self._follower_type = CoordinatorFollower
        self._replicas = replicas
        self._venue = venue
        self._interfaces = list(interfaces) if interfaces is not None else None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_event: asyncio.Event | None = None
        self._ready = threading.Event()

    def run(self) -> None:
        asyncio.run(self._follow())

    async def _follow(self) -> None:
        self._loop, self._stop_event = asyncio.get_running_loop(), asyncio.Event()
        self._ready.set()
        follower = self._follower_type(venue=self._venue, interfaces=self._interfaces,
                                       on_change=self._found)  # fmt: skip
        async with follower:
            await self._stop_event.wait()

    def _found(self, location: object) -> None:
        url = str(location.base_url)  # type: ignore[attr-defined]
        self._replicas.prefer(url)
        kiosk_event("coordinator_found", url=url, venue=self._venue)

    def stop(self) -> None:
        self._ready.wait(5)
        if self._loop is not None and self._stop_event is not None:
            with contextlib.suppress(RuntimeError):  # the loop has ended already
                self._loop.call_soon_threadsafe(self._stop_event.set)
        self.join(5)
