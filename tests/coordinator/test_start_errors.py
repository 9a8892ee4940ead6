"""A coordinator that cannot start says why in one line (no traceback) and
leaves no embedded server behind; an mDNS problem does not stop it serving."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest

from badgeline.coordinator.store.embedded import free_port
from tests.helpers import taken_port, wait_for

# mDNS on loopback is one network for every test process: these run one at a time.
pytestmark = pytest.mark.xdist_group("mdns")

REPO = Path(__file__).resolve().parents[2]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BADGELINE_")}
    return {**env, "PYTHONPATH": str(REPO)}  # this checkout, whatever folder it runs in


def _coordinator(folder: Path, *args: str, mdns: bool = False) -> list[str]:
    config = folder / "coordinator.toml"
    config.write_text(f"mdns = {'true' if mdns else 'false'}\n" + "".join(args))
    return [sys.executable, "-m", "badgeline.cli", "coordinator", "--config", str(config)]


def _server_is_gone(folder: Path) -> bool:
    pid_file = folder / "var/coordinator/redis/redis.pid"
    if not pid_file.exists():  # the server removes it when it shuts down
        return True
    pid = int(pid_file.read_text())
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    os.kill(pid, 9)  # never leave it behind, even when the test fails
    return False


def test_a_port_in_use_is_one_line_naming_it_and_the_embedded_server_stops(
    tmp_path: Path,
) -> None:
    # GIVEN something already listening on the coordinator's port
    with taken_port() as port:
        result = subprocess.run(
            _coordinator(tmp_path, f"listen_port = {port}\n"), cwd=tmp_path, env=_env(),
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    # THEN it exits 1 with the address and the keys to change, and no traceback
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"cannot listen on 127.0.0.1:{port}: ")
    assert "address already in use" in last and "listen_port" in last
    assert _server_is_gone(tmp_path)


def test_a_state_dir_that_cannot_be_made_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    result = subprocess.run(
        _coordinator(tmp_path, f'state_dir = "{tmp_path / "a-file" / "state"}"\n'),
        cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("state_dir: cannot create ")


def test_an_audit_dir_that_cannot_be_made_stops_the_start_before_redis(tmp_path: Path) -> None:
    # GIVEN an audit_dir below a file: jobs could never leave Redis
    (tmp_path / "a-file").write_text("")
    result = subprocess.run(
        _coordinator(tmp_path, f'audit_dir = "{tmp_path / "a-file" / "audit"}"\n'),
        cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    # THEN it exits 2 naming the setting, and no embedded server was left running
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("audit_dir: cannot create ")
    assert _server_is_gone(tmp_path)


async def test_mdns_on_an_address_this_host_lacks_is_logged_and_it_serves(
    tmp_path: Path,
) -> None:
    # GIVEN mdns_interfaces naming an address that is not on this machine (TEST-NET-1)
    port = free_port()
    command = _coordinator(
        tmp_path, f"listen_port = {port}\n", 'mdns_interfaces = ["192.0.2.1"]\n', mdns=True
    )
    log_path = tmp_path / "coordinator.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, cwd=tmp_path, env=_env(), stdout=log,
                                   stderr=subprocess.STDOUT)  # fmt: skip
    try:
        # THEN it serves the API, and says what is wrong with mDNS
        async def serving() -> bool:
            assert process.poll() is None, log_path.read_text()
            with contextlib.suppress(aiohttp.ClientError):
                async with (
                    aiohttp.ClientSession() as session,
                    session.get(f"http://127.0.0.1:{port}/healthz") as response,
                ):
                    return response.status == 200
            return False

        await wait_for(serving, timeout_s=30)
        assert '"event": "mdns_failed"' in log_path.read_text()
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert _server_is_gone(tmp_path)
