"""Nothing accepted is lost (invariant 1): kill -9 the real coordinator process
and its embedded Redis under load, restart on the same state directory, and
every job that was answered 201/200 is still there, once, in a valid state."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from badgeline.coordinator.store.embedded import free_port
from badgeline.protocol.states import JobState
from tests import conftest as shared
from tests.conftest import KIOSK_TOKEN, OPERATOR_TOKEN, TEST_PRINTERS, auth
from tests.helpers import job_body, wait_for

pytestmark = pytest.mark.slow

KIOSKS = 12
KILL_AFTER = 200  # acknowledged jobs before the plug is pulled
REPO = Path(__file__).resolve().parents[2]


def _write_config(path: Path) -> None:
    lines = [
        'venue = "durable"',
        "high_water_mark = 100000",
        'log_level = "WARNING"',
        f"known_printers = {json.dumps(shared.KNOWN_TEST_PRINTERS)}",
    ]
    for entry in shared.test_tokens():
        lines.append("[[tokens]]")
        fields = entry.model_dump(exclude_none=True)
        lines += [f"{key} = {json.dumps(value)}" for key, value in fields.items()]
    path.write_text("\n".join(lines) + "\n")


@dataclass
class Coordinator:
    """`badgeline coordinator` as a real process, with its embedded Redis."""

    config: Path
    state_dir: Path
    log_dir: Path
    runs: int = 0
    process: subprocess.Popen[bytes] | None = None
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.runs += 1
        self.port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("BADGELINE_")}
        log = (self.log_dir / f"coordinator-{self.runs}.log").open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "badgeline.cli", "coordinator", "--config", str(self.config),
             "--port", str(self.port), "--state-dir", str(self.state_dir)],
            stdout=log, stderr=subprocess.STDOUT, cwd=REPO, env=env,
        )  # fmt: skip
        log.close()

    def log(self) -> str:
        return (self.log_dir / f"coordinator-{self.runs}.log").read_text(errors="replace")[-3000:]

    def redis_pid(self) -> int:
        return int((self.state_dir / "redis" / "redis.pid").read_text().strip())

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@pytest.fixture
def coordinator(tmp_path: Path) -> Iterator[Coordinator]:
    config = tmp_path / "coordinator.toml"
    _write_config(config)
    process = Coordinator(config, tmp_path / "state", tmp_path)
    yield process
    process.stop()
    with contextlib.suppress(OSError, ValueError):  # never leave a server behind
        os.kill(process.redis_pid(), signal.SIGKILL)


async def _ready(session: aiohttp.ClientSession, coordinator: Coordinator) -> bool:
    assert coordinator.process is not None
    assert coordinator.process.poll() is None, f"coordinator exited:\n{coordinator.log()}"
    with contextlib.suppress(aiohttp.ClientError):
        async with session.get(coordinator.url + "/healthz") as response:
            return response.status == 200
    return False


def _gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")  # dead, maybe unreaped


@dataclass
class Load:
    acknowledged: dict[str, dict[str, Any]] = field(default_factory=dict)  # job_id -> body
    stop: asyncio.Event = field(default_factory=asyncio.Event)


async def _kiosk(session: aiohttp.ClientSession, url: str, load: Load, seed: int) -> None:
    rng = random.Random(seed)
    sent: list[dict[str, Any]] = []
    while not load.stop.is_set():
        if sent and rng.random() < 0.1:
            body = rng.choice(sent)  # a kiosk retry: must come back as the same job
        else:
            body = job_body(rng.choice(TEST_PRINTERS), priority=rng.randrange(0, 1001))
            sent.append(body)
        try:
            async with session.post(url + "/v1/jobs", json=body, headers=auth(KIOSK_TOKEN)) as r:
                answer = await r.json() if r.status in (200, 201) else None
        except (TimeoutError, aiohttp.ClientError, ValueError):
            # the coordinator is gone (or slow on a loaded machine: try again until told to stop)
            await asyncio.sleep(0.05)
            continue
        if answer is not None:
            load.acknowledged[answer["job_id"]] = body


async def _check_survivor(
    session: aiohttp.ClientSession, url: str, job_id: str, body: dict[str, Any]
) -> dict[str, Any]:
    async with session.get(f"{url}/v1/jobs/{job_id}", headers=auth(KIOSK_TOKEN)) as response:
        assert response.status == 200, f"acknowledged job {job_id} lost: {response.status}"
        job: dict[str, Any] = await response.json()
    assert job["state"] in set(JobState), job
    assert (job["idempotency_key"], job["attendee_id"], job["priority"]) == (
        body["idempotency_key"],
        body["attendee_id"],
        body["priority"],
    )
    # one key, one job: the same submission is still the same job
    async with session.post(url + "/v1/jobs", json=body, headers=auth(KIOSK_TOKEN)) as response:
        again = await response.json()
        assert response.status == 200 and again["job_id"] == job_id, again
    return job


async def _queued_everywhere(session: aiohttp.ClientSession, url: str) -> list[str]:
    members: list[str] = []
    for printer_id in TEST_PRINTERS:
        async with session.get(f"{url}/v1/queues/{printer_id}?limit=500",
                               headers=auth(OPERATOR_TOKEN)) as response:  # fmt: skip
            members += [job["job_id"] for job in (await response.json())["items"]]
    return members


@pytest.mark.parametrize("kill_redis", [True, False], ids=["coordinator+redis", "coordinator"])
async def test_kill_9_under_load_loses_no_acknowledged_job(
    coordinator: Coordinator, kill_redis: bool
) -> None:
    timeout = aiohttp.ClientTimeout(total=30)
    connector = aiohttp.TCPConnector(limit=KIOSKS)
    async with aiohttp.ClientSession(timeout=timeout, connector=connector) as session:
        # GIVEN the real coordinator with its embedded Redis (AOF, appendfsync always)
        coordinator.start()
        await wait_for(lambda: _ready(session, coordinator), timeout_s=30, interval_s=0.1)
        # AND kiosks submitting jobs (and some retries) concurrently
        load = Load()
        kiosks = [asyncio.create_task(_kiosk(session, coordinator.url, load, seed))
                  for seed in range(KIOSKS)]  # fmt: skip
        await wait_for(lambda: _at_least(load, KILL_AFTER), timeout_s=60)
        # WHEN Redis and then the coordinator are SIGKILLed mid-load (or the coordinator
        # alone: its Redis must not live on beside the next one on the same AOF)
        redis_pid = coordinator.redis_pid()
        if kill_redis:
            os.kill(redis_pid, signal.SIGKILL)
        assert coordinator.process is not None
        coordinator.process.kill()
        coordinator.process.wait()
        load.stop.set()
        await asyncio.gather(*kiosks)
        assert len(load.acknowledged) >= KILL_AFTER
        # AND the coordinator is started again on the same state directory
        coordinator.start()
        await wait_for(lambda: _ready(session, coordinator), timeout_s=30, interval_s=0.1)
        assert _gone(redis_pid) and coordinator.redis_pid() != redis_pid
        # THEN every acknowledged job is there, unchanged, in a valid state
        states: dict[str, str] = {}
        for job_id, body in load.acknowledged.items():
            job = await _check_survivor(session, coordinator.url, job_id, body)
            states[job_id] = job["state"]
        # AND each queued one is in exactly one printer queue, exactly once
        members = await _queued_everywhere(session, coordinator.url)
        assert len(members) == len(set(members))
        queued = {job_id for job_id, state in states.items() if state == "queued"}
        assert queued <= set(members)
        assert queued, states


async def _at_least(load: Load, count: int) -> bool:
    return len(load.acknowledged) >= count
