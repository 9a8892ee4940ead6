"""The coordinator as a newcomer first runs it: `badgeline coordinator` in an empty
folder with no config (what `./dev coordinator` does). Its state directory is then
the relative default `var/coordinator`, and a Ctrl-C reaches its whole process group."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
from redis.asyncio import Redis

from badgeline.coordinator.store.embedded import EmbeddedRedis, free_port
from tests.helpers import wait_for


async def test_an_embedded_server_with_a_relative_directory_starts_and_keeps_its_aof_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    server = EmbeddedRedis(Path("var/coordinator/redis"))
    await asyncio.to_thread(server.start)
    try:
        client = Redis(port=server.port, password=server.password)
        await client.set("written", "1")
        await client.aclose()
    finally:
        await asyncio.to_thread(server.stop)
    assert any((tmp_path / "var/coordinator/redis/appendonlydir").iterdir())
    assert (tmp_path / "var/coordinator/redis/redis.log").exists()


@pytest.fixture
def empty_folder(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "fresh"
    folder.mkdir()
    yield folder
    with contextlib.suppress(OSError, ValueError):  # never leave a server behind
        pid = int((folder / "var/coordinator/redis/redis.pid").read_text())
        os.kill(pid, signal.SIGKILL)


async def test_with_no_config_it_serves_and_a_ctrl_c_stops_it_cleanly(empty_folder: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("BADGELINE_")}
    env["BADGELINE_MDNS"] = "false"  # nothing to do with this test; keeps the LAN quiet
    log_path = empty_folder.parent / "coordinator.log"
    with log_path.open("wb") as log:
        # Its own process group, as a shell gives a foreground job.
        process = subprocess.Popen(
            [sys.executable, "-m", "badgeline.cli", "coordinator", "--port", str(port)],
            cwd=empty_folder, env=env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    try:

        async def serving() -> bool:
            assert process.poll() is None, log_path.read_text()
            url = f"http://127.0.0.1:{port}/healthz"
            with contextlib.suppress(aiohttp.ClientError):
                async with aiohttp.ClientSession() as session, session.get(url) as response:
                    return response.status == 200
            return False

        await wait_for(serving, timeout_s=30)
        redis_pid = int((empty_folder / "var/coordinator/redis/redis.pid").read_text())

        # WHEN the terminal's Ctrl-C goes to the whole foreground group
        os.killpg(process.pid, signal.SIGINT)
        code = await asyncio.to_thread(process.wait, 30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()

    # THEN it drained and stopped its own server after itself: exit 0, nothing
    # above info in its log (no "Redis went away" while it was still stopping)...
    lines = [json.loads(line) for line in log_path.read_text().splitlines()
             if line.startswith("{")]  # fmt: skip
    assert code == 0, log_path.read_text()
    # (but one: a config without tokens refuses every call, and says so)
    assert [line.get("event") for line in lines if line["level"] != "info"] == ["no_api_tokens"]
    assert [line["event"] for line in lines if "event" in line][-1] == "coordinator_stopping"
    assert not Path(f"/proc/{redis_pid}").exists()
    # The server heard the coordinator's SIGTERM, never the terminal's SIGINT.
    redis_log = (empty_folder / "var/coordinator/redis/redis.log").read_text()
    assert "Received SIGTERM" in redis_log
    assert "Received SIGINT" not in redis_log
    assert any((empty_folder / "var/coordinator/redis/appendonlydir").iterdir())
