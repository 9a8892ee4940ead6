"""Kiosk library fixtures: the real coordinator app on a real port, run on an event loop
thread of its own so that the tests, like a kiosk integrator's code, are plain
synchronous Python; the kiosk's outbox in tmp_path; a printer played over the agent
API (heartbeat, lease, start, ack) where a test needs a job to move on.

Timings are shortened (poll 50 ms, back-off 20 ms up to 300 ms): tests wait on
conditions, never on sleeps.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import secrets
import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis

from badgeline.coordinator.config import CoordinatorSettings
from badgeline.coordinator.store.embedded import EmbeddedRedis
from badgeline.kiosk import Kiosk
from badgeline.samples import sample_badge_pdf
from tests.agent.conftest import LiveCoordinator
from tests.conftest import KIOSK_TOKEN, OPERATOR_TOKEN, agent_token

FAST = {"poll_interval_s": 0.05, "retry_base_s": 0.02, "retry_max_s": 0.3,
        "connect_timeout_s": 2.0, "request_timeout_s": 10.0}  # fmt: skip
HEALTHY = {"reachable": True, "jammed": False, "cover_open": False, "paper": "ok"}


class ThreadedCoordinator:
    """LiveCoordinator (tests/agent/conftest.py) on its own loop thread: start, stop and
    start again on the same port and Redis state, from synchronous code."""

    def __init__(self, settings: CoordinatorSettings, redis_url: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="coordinator",
                                        daemon=True)  # fmt: skip
        self._thread.start()
        self.redis: Redis = self.run(self._redis(redis_url))
        self.live = LiveCoordinator(settings, self.redis)

    @staticmethod
    async def _redis(url: str) -> Redis:
        return Redis.from_url(url)

    def run(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        future: Future[Any] = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        return future.result(30)

    @property
    def url(self) -> str:
        return self.live.url

    def start(self) -> ThreadedCoordinator:
        self.run(self.live.start())
        return self

    def stop(self) -> None:
        self.run(self.live.stop())

    def close(self) -> None:
        self.stop()
        self.run(self.redis.aclose())
        self.run(_finish_loop())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()


async def _finish_loop() -> None:
    """As asyncio.run ends a loop: what is still running is cancelled and waited for, so
    that every connection it held is closed on this loop, not left to the garbage
    collector (a ResourceWarning that fails whichever test it lands in)."""
    others = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    for task in others:
        task.cancel()
    await asyncio.gather(*others, return_exceptions=True)
    await asyncio.get_running_loop().shutdown_asyncgens()


def call(url: str, method: str, path: str, token: str, body: Any = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url + path, data=data, method=method)
    request.add_header("Authorization", f"Bearer {token}")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


class PlayedPrinter:
    """A printer's agent played over the agent API: what a test needs of one, no more."""

    def __init__(self, coordinator: ThreadedCoordinator, printer_id: str = "printer-a") -> None:
        self.coordinator = coordinator
        self.printer_id = printer_id

    def _agent(self, path: str, body: Any = None) -> Any:
        status, answer = call(self.coordinator.url, "POST", f"/v1/agents/{self.printer_id}{path}",
                              agent_token(self.printer_id), body)  # fmt: skip
        assert status == 200, (path, status, answer)
        return answer

    def heartbeat(self) -> None:
        self._agent("/heartbeat", {"agent_id": f"pi-{self.printer_id}", "version": "test",
                                   "health": HEALTHY})  # fmt: skip

    def lease(self) -> dict[str, Any]:
        self.heartbeat()
        jobs = self._agent("/lease?wait=5&max=1")["jobs"]
        assert len(jobs) == 1, jobs
        leased: dict[str, Any] = jobs[0]
        return leased

    def start(self, leased: dict[str, Any]) -> None:
        self._agent(f"/jobs/{leased['job_id']}/start", {"lease_id": leased["lease_id"]})

    def ack(self, leased: dict[str, Any], result: str = "printed") -> None:
        self._agent(f"/jobs/{leased['job_id']}/ack",
                    {"lease_id": leased["lease_id"], "result": result})  # fmt: skip

    def print_next(self) -> str:
        leased = self.lease()
        self.start(leased)
        self.ack(leased)
        return str(leased["job_id"])


def operator(coordinator: ThreadedCoordinator | str, path: str) -> Any:
    url = coordinator if isinstance(coordinator, str) else coordinator.url
    status, answer = call(url, "GET", path, OPERATOR_TOKEN)
    assert status == 200, (path, status, answer)
    return answer


def jobs_of(coordinator: ThreadedCoordinator | str, attendee_id: str) -> list[dict[str, Any]]:
    """Every job the coordinator (or the one at that URL) holds for the attendee, as an
    operator sees them."""
    found: list[dict[str, Any]] = []
    path = f"/v1/jobs?attendee_id={attendee_id}&limit=500"
    while True:  # every page, along the cursors
        page = operator(coordinator, path)
        found += page["items"]
        if page["next"] is None:
            return found
        path = f"/v1/jobs?attendee_id={attendee_id}&limit=500&after={page['next']}"


@pytest.fixture
def coordinator(
    settings: CoordinatorSettings, redis_server: EmbeddedRedis
) -> Iterator[ThreadedCoordinator]:
    threaded = ThreadedCoordinator(settings, redis_server.url).start()
    yield threaded
    threaded.close()


MakeCoordinator = Callable[..., ThreadedCoordinator]


@pytest.fixture
def make_coordinator(
    settings: CoordinatorSettings, redis_server: EmbeddedRedis
) -> Iterator[MakeCoordinator]:
    """`make_coordinator(**overrides)`: another coordinator of the test's venue, with
    some settings changed, started; closed after the test."""
    made: list[ThreadedCoordinator] = []

    def make(**overrides: Any) -> ThreadedCoordinator:
        changed = CoordinatorSettings.model_validate({**settings.model_dump(), **overrides})
        made.append(ThreadedCoordinator(changed, redis_server.url).start())
        return made[-1]

    yield make
    for threaded in made:
        threaded.close()


@pytest.fixture
def printer(coordinator: ThreadedCoordinator) -> PlayedPrinter:
    return PlayedPrinter(coordinator)


MakeKiosk = Callable[..., Kiosk]


@pytest.fixture
def make_kiosk(tmp_path: Path) -> Iterator[MakeKiosk]:
    """`make_kiosk(coordinator_urls, **settings)`: a Kiosk with the test kiosk token and
    fast timings, its outbox in tmp_path (the same one each call, unless given)."""
    made: list[Kiosk] = []

    def make(coordinator_urls: Any, **options: Any) -> Kiosk:
        outbox = tmp_path / "kiosk" / "outbox.sqlite3"
        settings = {"coordinator_urls": coordinator_urls, "token": KIOSK_TOKEN,
                    "outbox_path": outbox, **FAST, **options}  # fmt: skip
        kiosk = Kiosk(**settings)
        made.append(kiosk)
        return kiosk

    yield make
    for kiosk in made:
        kiosk.close()


@pytest.fixture(scope="session")
def badge() -> bytes:
    return sample_badge_pdf("A-KIOSK-0001", "Kim Kiosk", "Outbox Ltd")


def unique_attendee() -> str:
    return "att_" + secrets.token_hex(5)


def artifact_ref(pdf: bytes) -> str:
    return f"artifact://{hashlib.sha256(pdf).hexdigest()}.pdf"


@contextlib.contextmanager
def closed_port() -> Iterator[int]:
    """A loopback port held (bound) but not listening: a connection to it is refused."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield held.getsockname()[1]
