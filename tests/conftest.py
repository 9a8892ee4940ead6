"""Fixtures that start real things: a Redis server (the binary the product
ships), the coordinator app on a real socket, and clean up after themselves."""

from __future__ import annotations

import logging
import os
import secrets
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from redis.asyncio import Redis

from badgeline.coordinator.api.auth import token_digest
from badgeline.coordinator.config import CoordinatorSettings, TokenEntry
from badgeline.coordinator.store.embedded import FREE_PORTS_ENV, EmbeddedRedis

KIOSK_TOKEN = "kiosk-token-for-tests"
# Another kiosk (no group shared with kiosk-1): it must not see kiosk-1's jobs.
OTHER_KIOSK_TOKEN = "other-kiosk-token-for-tests"
OPERATOR_TOKEN = "operator-token-for-tests"
# A Prometheus server's: GET /metrics and nothing else.
METRICS_TOKEN = "metrics-token-for-tests"
TEST_PRINTERS = ("printer-a", "printer-b", "printer-c")
# More agents with tokens, for the few tests that run a printer per speed or model.
MORE_TEST_PRINTERS = ("printer-d", "printer-e")
# Pre-registered (the coordinator's known_printers): tests submit to them before any
# heartbeat, as a venue that lists its printers in the config may. A job naming any
# other printer no agent has reported is refused (unknown_printer).
KNOWN_TEST_PRINTERS = [*TEST_PRINTERS, *MORE_TEST_PRINTERS]


def agent_token(printer_id: str) -> str:
    return f"agent-token-{printer_id}"


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_tokens() -> list[TokenEntry]:
    entries = [
        TokenEntry(name="kiosk-1", role="kiosk", sha256=token_digest(KIOSK_TOKEN)),
        TokenEntry(name="kiosk-2", role="kiosk", sha256=token_digest(OTHER_KIOSK_TOKEN)),
        TokenEntry(name="ops", role="operator", sha256=token_digest(OPERATOR_TOKEN)),
        TokenEntry(name="prometheus", role="metrics", sha256=token_digest(METRICS_TOKEN)),
    ]
    entries += [
        TokenEntry(name=f"agent-{p}", role="agent", sha256=token_digest(agent_token(p)),
                   printer_id=p)
        for p in TEST_PRINTERS + MORE_TEST_PRINTERS
    ]  # fmt: skip
    return entries


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedRedis]:
    server = EmbeddedRedis(tmp_path_factory.mktemp("redis"), appendfsync="everysec")
    server.start()
    yield server
    server.stop()


@pytest.fixture
async def redis(redis_server: EmbeddedRedis) -> AsyncIterator[Redis]:
    client = Redis.from_url(redis_server.url)
    yield client
    await client.aclose()


@pytest.fixture
def settings(redis_server: EmbeddedRedis, tmp_path: Path) -> CoordinatorSettings:
    # A venue of its own per test: tests share one server but never each other's keys.
    return CoordinatorSettings(
        venue="t" + secrets.token_hex(6),
        redis_url=redis_server.url,
        state_dir=tmp_path / "state",
        tokens=test_tokens(),
        known_printers=KNOWN_TEST_PRINTERS,
        lease_scan_interval_s=0.1,
        retry_backoff_unit_s=0.01,
        mdns=False,  # the mDNS tests start their own adverts and browsers
    )


@pytest.fixture
def own_root_logging() -> Iterator[None]:
    """For a test that runs a command's run() in this process: run() configures the
    process's logging (root level and handler), which must not outlive the test."""
    root = logging.getLogger()
    level, handlers = root.level, root.handlers[:]
    yield
    root.setLevel(level)
    root.handlers[:] = handlers


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """With `--dist loadgroup` (./dev test): the groups of tests/xdist_groups.py."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from tests.xdist_groups import GroupScheduling, module_groups

    tests = Path(__file__).resolve().parent
    return GroupScheduling(config, log, module_groups(config.rootpath, tests))


def pytest_configure(config: pytest.Config) -> None:
    """In a test worker: this worker and every process it starts pick ports from their
    own share (free_port), never one another worker picked to bind a moment later."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if worker.startswith("gw"):
        count = os.environ["PYTEST_XDIST_WORKER_COUNT"]
        os.environ[FREE_PORTS_ENV] = f"{int(worker.removeprefix('gw'))}/{count}"
