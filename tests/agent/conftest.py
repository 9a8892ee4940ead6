"""Fixtures for agent tests: the real coordinator on a real port (real Redis behind it),
real printer emulators, real agents with their SQLite journals in tmp_path.

Timing constants are shortened (heartbeat and probe every 0.1 s, back-off capped
at 0.5 s, a 0.5 s printer timeout) so a test waits on conditions, never on sleeps.
"""

from __future__ import annotations

import contextlib
import secrets
import tempfile
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from redis.asyncio import Redis

from badgeline.agent.config import AgentSettings
from badgeline.agent.service import Agent
from badgeline.agent.sources import BadgeSources
from badgeline.coordinator.app import create_app
from badgeline.coordinator.config import CoordinatorSettings
from badgeline.coordinator.store.embedded import free_port
from badgeline.emulator import PrinterEmulator
from badgeline.samples import core_font_badge_pdf, sample_badge_pdf
from tests.agent.agent_process import (
    START_TIMEOUT_S,
    AgentProcess,
    RunningAgent,
    agent_config_for,
)
from tests.agent.hostile_server import HostileServer
from tests.conftest import KIOSK_TOKEN, OPERATOR_TOKEN, agent_token, auth
from tests.helpers import wait_for


class LiveCoordinator:
    """The coordinator app on a real TCP port, stoppable and restartable on that port."""

    def __init__(self, settings: CoordinatorSettings, redis: Redis) -> None:
        self.settings = settings
        self.redis = redis
        self.port = 0
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self._runner is not None

    async def start(self) -> None:
        # A short shutdown timeout: an agent's lease long-poll must not hold up a stop.
        runner = web.AppRunner(create_app(self.settings, self.redis), shutdown_timeout=0.2)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", self.port)
        await site.start()
        self.port = runner.addresses[0][1]
        self._runner = runner

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()


class Kiosk:
    """A kiosk (and an operator) talking to the live coordinator over HTTP."""

    def __init__(self, coordinator: LiveCoordinator, session: aiohttp.ClientSession) -> None:
        self.coordinator = coordinator
        self.session = session

    async def submit(self, badge_ref: str, printer_target: str, priority: int = 100) -> str:
        body = {
            "attendee_id": "att_" + secrets.token_hex(4),
            "badge_pdf_ref": badge_ref,
            "printer_target": printer_target,
            "priority": priority,
            "idempotency_key": "scan-" + secrets.token_hex(8),
        }
        async with self.session.post(
            self.coordinator.url + "/v1/jobs", json=body, headers=auth(KIOSK_TOKEN)
        ) as response:
            answer = await response.json()
            assert response.status == 201, answer
            return str(answer["job_id"])

    async def job(self, job_id: str) -> dict[str, Any]:
        async with self.session.get(
            f"{self.coordinator.url}/v1/jobs/{job_id}", headers=auth(KIOSK_TOKEN)
        ) as response:
            assert response.status == 200
            answer: dict[str, Any] = await response.json()
            return answer

    async def state(self, job_id: str) -> str:
        return str((await self.job(job_id))["state"])

    async def operator_get(self, path: str) -> Any:
        async with self.session.get(
            self.coordinator.url + path, headers=auth(OPERATOR_TOKEN)
        ) as response:
            assert response.status == 200, await response.text()
            return await response.json()

    async def cancel(self, job_id: str) -> int:
        async with self.session.post(
            f"{self.coordinator.url}/v1/jobs/{job_id}/cancel", headers=auth(KIOSK_TOKEN)
        ) as response:
            return response.status

    async def upload(self, pdf: bytes, sha256: str) -> str:
        async with self.session.put(
            f"{self.coordinator.url}/v1/artifacts/{sha256}.pdf",
            data=pdf,
            headers={**auth(OPERATOR_TOKEN), "Content-Type": "application/pdf"},
        ) as response:
            answer = await response.json()
            assert response.status in (200, 201), answer
            return str(answer["ref"])


@pytest.fixture
async def coordinator(
    settings: CoordinatorSettings, redis: Redis
) -> AsyncIterator[LiveCoordinator]:
    live = LiveCoordinator(settings, redis)
    await live.start()
    yield live
    await live.stop()


@pytest.fixture
async def kiosk(coordinator: LiveCoordinator) -> AsyncIterator[Kiosk]:
    async with aiohttp.ClientSession() as session:
        yield Kiosk(coordinator, session)


@pytest.fixture
async def start_emulator(tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    started: list[PrinterEmulator] = []

    async def start(**options: Any) -> PrinterEmulator:
        emulator = PrinterEmulator(out_dir=tmp_path / f"printed-{len(started)}", **options)
        await emulator.start()
        started.append(emulator)
        return emulator

    yield start
    for emulator in started:
        await emulator.stop()


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as client:
        yield client


@pytest.fixture
async def start_agent(session: aiohttp.ClientSession, tmp_path: Path) -> AsyncIterator[Any]:
    """Start `badgeline agent` processes (tests/agent/agent_process.py) with test timings,
    each waited for until healthy; all are killed at the end."""
    started: list[AgentProcess] = []

    async def start(
        settings: AgentSettings, emulator: PrinterEmulator, *, file_size_limit: int | None = None
    ) -> RunningAgent:
        status_port = free_port()
        config = agent_config_for(settings, emulator, tmp_path / f"agent-{len(started)}.toml",
                                  status_port)  # fmt: skip
        process = AgentProcess(config, log_through_pipe=True, file_size_limit=file_size_limit)
        started.append(await process.start())
        agent = RunningAgent(process, status_port, session)
        await wait_for(agent.healthy, timeout_s=START_TIMEOUT_S)
        return agent

    yield start
    for process in started:
        await process.kill()


@pytest.fixture
async def hostile() -> AsyncIterator[HostileServer]:
    """A badge server that misbehaves per path (tests/agent/hostile_server.py)."""
    server = HostileServer()
    await server.start()
    yield server
    await server.stop()


@pytest.fixture(scope="session")
def badge_pdf() -> bytes:
    return sample_badge_pdf()


@pytest.fixture
def badge_ref(tmp_path: Path, badge_pdf: bytes) -> str:
    """A good badge as a file:// reference."""
    path = tmp_path / "badges" / "ada.pdf"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(badge_pdf)
    return path.as_uri()


@pytest.fixture
def core_font_ref(tmp_path: Path) -> str:
    """A badge the agent must refuse: its font is not embedded."""
    path = tmp_path / "badges" / "core-font.pdf"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(core_font_badge_pdf())
    return path.as_uri()


def agent_settings(
    printer_id: str,
    coordinator: LiveCoordinator,
    emulator: PrinterEmulator | None,
    state_dir: Path,
    **overrides: Any,
) -> AgentSettings:
    """Test timing; the printer is `emulator` unless `printer=` names another one."""
    values: dict[str, Any] = {
        "printer_id": printer_id,
        "agent_id": f"test-agent-{printer_id}",
        "coordinator_url": coordinator.url,
        "token": agent_token(printer_id),
        "state_dir": state_dir,
        "printer": emulator and {"kind": "emulator", "host": "127.0.0.1",
                                 "port": emulator.port, "timeout_s": 0.5},
        "heartbeat_interval_s": 0.1,
        "probe_interval_s": 0.1,
        "lease_wait_s": 2.0,
        "retry_initial_s": 0.05,
        "retry_max_s": 0.5,
        "stop_grace_s": 5.0,
        # Tests that want mDNS turn it on (on loopback); a free status port each,
        # so agents running side by side never fight over 8421.
        "mdns": False,
        "status_port": 0,
        # Badges from the tests' folders (under the temporary directory) and this
        # machine's own servers.
        "badge_file_roots": [Path(tempfile.gettempdir())],
        "badge_http_hosts": ["127.0.0.1:*"],
    }  # fmt: skip
    values.update(overrides)
    return AgentSettings(**values)


def local_sources(*file_roots: Path) -> BadgeSources:
    """Badge sources for fetch tests: files under `file_roots`, this machine's servers."""
    return BadgeSources("printer-a", file_roots, ["127.0.0.1:*"])


@pytest.fixture
async def run_agent() -> AsyncIterator[Callable[[AgentSettings], Any]]:
    """Start agents; whatever a test leaves running is stopped at the end."""
    running: list[Agent] = []

    async def run(settings: AgentSettings) -> Agent:
        agent = Agent(settings)
        await agent.start()
        running.append(agent)
        return agent

    yield run
    for agent in running:
        with contextlib.suppress(Exception):
            await agent.stop()
