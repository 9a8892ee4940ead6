"""The coordinator's container files: Dockerfile and compose.yaml, checked without a
container engine.

What runs here is what the containers run: the Valkey command and health check of
compose.yaml with the valkey-server and valkey-cli the coordinator extra ships, the
coordinator with compose's environment, and the image's HEALTHCHECK command against
it. Only the paths inside the containers are mapped to a temporary folder (and
loopback ports stand in for the compose network). hadolint lints the Dockerfile.
docs/container.md says how the stack was also run under Docker.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from badgeline.coordinator.api.auth import token_digest
from badgeline.coordinator.config import load_coordinator_settings
from badgeline.coordinator.store.embedded import find_server_binary, free_port
from tests.helpers import job_body, wait_for
from tests.packaging.conftest import REPO_ROOT

DOCKERFILE = REPO_ROOT / "Dockerfile"
COMPOSE = REPO_ROOT / "compose.yaml"
KIOSK_TOKEN = "kiosk-token-for-the-container-test"


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, continuation lines joined, comments left out."""
    instructions: list[tuple[str, str]] = []
    pending = ""
    for line in DOCKERFILE.read_text().splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        pending += line.rstrip().removesuffix("\\") + " "
        if not line.rstrip().endswith("\\"):
            keyword, _, rest = pending.strip().partition(" ")
            instructions.append((keyword.upper(), " ".join(rest.split())))
            pending = ""
    return instructions


def final_stage() -> list[tuple[str, str]]:
    instructions = dockerfile_instructions()
    last_from = max(i for i, (keyword, _) in enumerate(instructions) if keyword == "FROM")
    return instructions[last_from:]


def healthcheck_command() -> list[str]:
    (arguments,) = [rest for keyword, rest in final_stage() if keyword == "HEALTHCHECK"]
    exec_form = arguments.partition(" CMD ")[2]
    command: list[str] = json.loads(exec_form)
    return command


def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return loaded


class Mapped:
    """The containers' paths, in a folder of the test's."""

    def __init__(self, root: Path) -> None:
        self.secrets = root / "run-secrets"
        self.data = root / "data"
        self.secrets.mkdir()
        self.data.mkdir()

    def path(self, text: str) -> str:
        return text.replace("/run/secrets/", f"{self.secrets}/").replace("/data", str(self.data))


def test_the_image_installs_the_coordinator_extra_only_and_runs_unprivileged() -> None:
    instructions = dockerfile_instructions()
    # GIVEN the Dockerfile THEN one pip install, of the coordinator extra alone
    installs = [
        rest for keyword, rest in instructions if keyword == "RUN" and "pip install" in rest
    ]
    assert len(installs) == 1 and '"/src[coordinator]"' in installs[0]
    # AND the final stage runs as a numeric non-root user, the coordinator, checked on /healthz
    users = [rest for keyword, rest in final_stage() if keyword == "USER"]
    assert len(users) == 1 and users[0].split(":")[0].isdigit() and users[0].split(":")[0] != "0"
    assert ("ENTRYPOINT", '["badgeline"]') in final_stage()
    assert any(k == "CMD" and rest.startswith('["coordinator"') for k, rest in final_stage())
    assert "/healthz" in " ".join(healthcheck_command())
    # AND hadolint (every rule, failing on its "info" level too) finds nothing
    linted = subprocess.run(
        [shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint"),
         "--failure-threshold", "info", str(DOCKERFILE)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert linted.returncode == 0, linted.stdout + linted.stderr


def test_compose_gives_valkey_a_password_file_an_aof_and_a_volume() -> None:
    # GIVEN compose.yaml
    spec = compose()
    valkey, coordinator = spec["services"]["valkey"], spec["services"]["coordinator"]
    command = valkey["command"]
    # THEN Valkey reads its password from a secret file, never from its command line
    assert command[:2] == ["valkey-server", "/run/secrets/valkey_conf"]
    assert not [arg for arg in command if "requirepass" in arg or arg == "--requirepass"]
    # AND appends every write to its AOF, fsynced each time, in /data on a named volume
    options = dict(zip(command[2::2], command[3::2], strict=True))
    assert options["--appendonly"] == "yes" and options["--appendfsync"] == "always"
    assert options["--dir"] == "/data" and "valkey-data:/data" in valkey["volumes"]
    assert spec["volumes"]["valkey-data"]["name"] == "badgeline-valkey-data"
    # AND the coordinator starts once Valkey's (authenticated) health check passes
    assert coordinator["depends_on"]["valkey"]["condition"] == "service_healthy"
    assert {"valkey_conf", "redis_password"} <= set(valkey["secrets"])
    assert coordinator["secrets"] == ["redis_password"]
    assert {s["file"] for s in spec["secrets"].values()} == {
        "./secrets/valkey.conf", "./secrets/redis-password",
    }  # fmt: skip
    assert "ports" not in valkey  # only the coordinator reaches it


def test_compose_environment_is_a_valid_coordinator_configuration(tmp_path: Path) -> None:
    # GIVEN the coordinator's environment in compose.yaml, its secret file in place
    mapped = Mapped(tmp_path)
    (mapped.secrets / "redis_password").write_text("pw-from-the-secret\n")
    environment = {
        key: mapped.path(str(value))
        for key, value in compose()["services"]["coordinator"]["environment"].items()
    }
    # WHEN the coordinator loads its settings from it
    with _environment(environment):
        settings = load_coordinator_settings(None)
    # THEN it uses the compose service's Valkey, with the secret's password, and no mDNS
    assert settings.redis_url == "redis://valkey:6379/0"
    assert settings.redis_url_with_password(settings.redis_url) == (
        "redis://:pw-from-the-secret@valkey:6379/0"
    )
    assert settings.mdns is False


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextlib.asynccontextmanager
async def process(
    *command: str, env: dict[str, str] | None = None
) -> AsyncIterator[asyncio.subprocess.Process]:
    started = await asyncio.create_subprocess_exec(
        *command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        yield started
    finally:
        await stop(started)


async def stop(started: asyncio.subprocess.Process) -> None:
    if started.returncode is None:
        started.terminate()
        await asyncio.wait_for(started.wait(), timeout=30)


def run_shell(script: str, env: dict[str, str]) -> int:
    return subprocess.run(["sh", "-c", script], env=env, timeout=30).returncode


@pytest.mark.timeout(120)
async def test_the_compose_valkey_and_the_image_healthcheck_run_for_real(tmp_path: Path) -> None:
    # GIVEN the secret files made as docs/container.md says, at the containers' paths
    mapped = Mapped(tmp_path)
    password = "a-password-for-the-container-test"
    (mapped.secrets / "valkey_conf").write_text(f"requirepass {password}\n")
    (mapped.secrets / "redis_password").write_text(f"{password}\n")
    valkey, coordinator = (compose()["services"][name] for name in ("valkey", "coordinator"))
    redis_port, api_port = free_port(), free_port()
    server = find_server_binary()
    tools = {**os.environ, "PATH": f"{Path(server).parent}{os.pathsep}{os.environ['PATH']}"}
    health = mapped.path(valkey["healthcheck"]["test"][1]).replace("$$", "$")
    health = health.replace("valkey-cli", f"valkey-cli -p {redis_port}")
    command = [mapped.path(arg) for arg in valkey["command"]]
    command[0] = server
    # WHEN Valkey runs compose's command (on a loopback port: the official image's
    # VALKEY_EXTRA_FLAGS way of adding options)
    async with process(
        *command, "--port", str(redis_port), "--bind", "127.0.0.1"
    ) as server_process:
        # THEN its authenticated health check passes, and fails with a wrong password
        async def valkey_healthy() -> bool:
            return await asyncio.to_thread(run_shell, health, tools) == 0

        await wait_for(valkey_healthy, timeout_s=20, interval_s=0.1)
        wrong = health.replace("$(cat ", "wrong$(cat ")
        assert await asyncio.to_thread(run_shell, wrong, tools) != 0
        # WHEN the coordinator starts with compose's environment and the image's command
        config = tmp_path / "coordinator.toml"
        config.write_text(
            'known_printers = ["printer-a"]\n'  # no agent runs: the job's printer is named
            '[[tokens]]\nname = "kiosk-1"\nrole = "kiosk"\n'
            f'sha256 = "{token_digest(KIOSK_TOKEN)}"\n'
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("BADGELINE_")}
        env |= {k: mapped.path(str(v)) for k, v in coordinator["environment"].items()}
        env |= {"PYTHONPATH": str(REPO_ROOT), "BADGELINE_LISTEN_HOST": "127.0.0.1",
                "BADGELINE_LISTEN_PORT": str(api_port)}  # fmt: skip
        env["BADGELINE_REDIS_URL"] = env["BADGELINE_REDIS_URL"].replace(
            "valkey:6379", f"127.0.0.1:{redis_port}"
        )
        program, *arguments = healthcheck_command()
        assert program == "python"
        healthcheck = [sys.executable, *arguments]

        def healthy() -> bool:
            return subprocess.run(healthcheck, env=env, timeout=10).returncode == 0

        async with process(
            sys.executable, "-m", "badgeline.cli", "coordinator", "--config", str(config),
            "--state-dir", str(tmp_path / "state"), env=env,
        ):  # fmt: skip
            # THEN the image's HEALTHCHECK command passes once it serves
            await wait_for(lambda: asyncio.to_thread(healthy), timeout_s=60, interval_s=0.2)
            # AND a kiosk's job is accepted and lands in Valkey's AOF, in the volume's folder
            async with aiohttp.ClientSession() as http:
                answer = await http.post(
                    f"http://127.0.0.1:{api_port}/v1/jobs", json=job_body(),
                    headers={"Authorization": f"Bearer {KIOSK_TOKEN}"},
                )  # fmt: skip
                assert answer.status == 201, await answer.text()
                job_id = (await answer.json())["job_id"]
            aof = b"".join(p.read_bytes() for p in (mapped.data / "appendonlydir").iterdir())
            assert job_id.encode() in aof
            # WHEN Valkey stops THEN the same HEALTHCHECK command fails (/healthz answers 503)
            await stop(server_process)

            async def unhealthy() -> bool:
                return not await asyncio.to_thread(healthy)

            await wait_for(unhealthy, timeout_s=30, interval_s=0.2)
            async with (
                aiohttp.ClientSession() as http,
                http.get(f"http://127.0.0.1:{api_port}/healthz") as probe,
            ):
                assert probe.status == 503
