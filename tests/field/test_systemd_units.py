"""The unit files (badgeline/provision/files/): valid for systemd, hardened, runnable as hardened.

Needs `systemd-analyze` (apt-get install -y systemd); it works without systemd
running. Nothing here is skipped: a missing tool fails with the install command.
"""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from redis import Redis
from redis.exceptions import ConnectionError as RedisConnectionError

from badgeline.coordinator.store.embedded import find_server_binary

UNITS_DIR = Path(__file__).resolve().parents[2] / "badgeline" / "provision" / "files"
INSTALLED_BADGELINE = "/opt/badgeline/venv/bin/badgeline"
INSTALLED_REDIS = "/usr/bin/redis-server"
MAX_EXPOSURE = 2.5
# The installer keeps root's file and module powers and the network (docs/field-install.md).
MAX_INSTALLER_EXPOSURE = 4.0
UNITS = ["badgeline-agent.service", "badgeline-coordinator.service", "badgeline-redis.service"]


def systemd_analyze() -> str:
    found = shutil.which("systemd-analyze")
    assert found, "systemd-analyze is missing: run `apt-get install -y systemd` (CI does)"
    return found


def badgeline_entry_point() -> str:
    found = shutil.which("badgeline") or str(Path(sys.executable).parent / "badgeline")
    assert Path(found).exists(), "no `badgeline` entry point: run `pip install -e .` (./dev does)"
    return found


def unit_settings(unit: str) -> dict[str, list[str]]:
    """Key -> values of a unit file (keys may repeat: DeviceAllow=, SystemCallFilter=)."""
    settings: dict[str, list[str]] = {}
    for line in (UNITS_DIR / unit).read_text().splitlines():
        if "=" in line and not line.startswith(("#", "[")):
            key, _, value = line.partition("=")
            settings.setdefault(key.strip(), []).append(value.strip())
    return settings


def runnable_copy(unit: str, directory: Path) -> Path:
    """The unit with ExecStart pointing at a binary that exists on this machine.

    `verify` fails when the ExecStart binary is missing; /opt/badgeline is where
    a Pi has it, so the test substitutes the real entry point (or valkey-server).
    """
    text = (UNITS_DIR / unit).read_text()
    assert INSTALLED_BADGELINE in text or INSTALLED_REDIS in text
    text = text.replace(INSTALLED_BADGELINE, badgeline_entry_point())
    text = text.replace(INSTALLED_REDIS, find_server_binary())
    copy = directory / unit
    copy.write_text(text)
    return copy


@pytest.mark.parametrize("unit", UNITS)
def test_each_unit_passes_systemd_analyze_verify(unit: str, tmp_path: Path) -> None:
    # GIVEN the unit with its ExecStart pointed at a real binary
    copy = runnable_copy(unit, tmp_path)
    # WHEN systemd checks it THEN it reports nothing at all
    result = subprocess.run(
        [systemd_analyze(), "verify", "--man=no", str(copy)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip() == "", result.stderr


def test_the_first_boot_installer_unit_passes_verify() -> None:
    # GIVEN the one-shot unit provisioning enables (its ExecStart is /bin/bash, present here)
    unit = UNITS_DIR / "badgeline-install.service"
    # WHEN/THEN systemd finds nothing to complain about
    result = subprocess.run(
        [systemd_analyze(), "verify", "--man=no", str(unit)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip() == "", result.stderr


def test_verify_does_reject_a_unit_whose_binary_is_missing(tmp_path: Path) -> None:
    # GIVEN the agent unit as shipped, naming /opt/badgeline (absent on this machine)
    assert not Path(INSTALLED_BADGELINE).exists()
    copy = tmp_path / "badgeline-agent.service"
    shutil.copy(UNITS_DIR / "badgeline-agent.service", copy)
    # WHEN verified THEN it fails: the test above proves something, it is not a no-op
    result = subprocess.run(
        [systemd_analyze(), "verify", "--man=no", str(copy)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode != 0
    assert "is not executable" in result.stderr


@pytest.mark.parametrize("unit", UNITS)
def test_each_unit_rates_an_exposure_of_at_most_2_5(unit: str, tmp_path: Path) -> None:
    # GIVEN the unit WHEN systemd rates its sandboxing offline
    copy = runnable_copy(unit, tmp_path)
    result = subprocess.run(
        [systemd_analyze(), "security", "--offline=yes", "--no-pager", str(copy)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    match = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", result.stdout)
    assert match, result.stdout + result.stderr
    # THEN it is well inside "OK" (a unit with only the four basic settings rates 8.4)
    assert float(match.group(1)) <= MAX_EXPOSURE, result.stdout


def test_the_first_boot_installer_is_sandboxed_as_far_as_installing_allows() -> None:
    # GIVEN the installer unit, which must stay root (apt, /etc, /opt, usblp, udev, systemctl)
    unit = UNITS_DIR / "badgeline-install.service"
    # WHEN systemd rates it offline
    result = subprocess.run(
        [systemd_analyze(), "security", "--offline=yes", "--no-pager", str(unit)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    match = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", result.stdout)
    assert match, result.stdout + result.stderr
    # THEN everything it does not need is closed (with none of it, it rated 9.6 UNSAFE)
    assert float(match.group(1)) <= MAX_INSTALLER_EXPOSURE, result.stdout


@pytest.mark.parametrize("unit", ["badgeline-agent.service", "badgeline-coordinator.service"])
def test_service_units_are_notify_with_a_watchdog_restart_and_own_state(unit: str) -> None:
    settings = unit_settings(unit)
    assert settings["Type"] == ["notify"]
    assert settings["NotifyAccess"] == ["main"]
    assert settings["WatchdogSec"] == ["30"]
    assert settings["Restart"] == ["always"]
    assert settings["DynamicUser"] == ["yes"]
    assert settings["StateDirectory"] == [unit.removesuffix(".service")]
    for hardening in ("NoNewPrivileges", "ProtectHome", "PrivateTmp", "MemoryDenyWriteExecute"):
        assert settings[hardening] == ["yes"], hardening
    assert settings["ProtectSystem"] == ["strict"]
    assert settings["CapabilityBoundingSet"] == [""]


def test_units_do_not_restart_after_errors_only_a_person_can_fix() -> None:
    # The exit statuses main() gives a bad config or a refused enrolment code:
    # systemd must not restart those every RestartSec (every other failure it must).
    from badgeline.agent.main import EXIT_CONFIG_ERROR, EXIT_ENROLMENT_REFUSED
    from badgeline.coordinator.main import EXIT_CONFIG_ERROR as COORDINATOR_CONFIG_ERROR

    agent = unit_settings("badgeline-agent.service")["RestartPreventExitStatus"]
    coordinator = unit_settings("badgeline-coordinator.service")["RestartPreventExitStatus"]
    assert agent == [f"{EXIT_CONFIG_ERROR} {EXIT_ENROLMENT_REFUSED}"]
    assert coordinator == [str(COORDINATOR_CONFIG_ERROR)]
    assert 1 not in (EXIT_CONFIG_ERROR, EXIT_ENROLMENT_REFUSED, COORDINATOR_CONFIG_ERROR)


def test_the_agent_unit_can_reach_usb_printers_and_nothing_else() -> None:
    settings = unit_settings("badgeline-agent.service")
    assert settings["ExecStart"] == [
        f"{INSTALLED_BADGELINE} agent --config /etc/badgeline/agent.toml"
    ]
    assert settings["SupplementaryGroups"] == ["lp"]
    assert settings["DevicePolicy"] == ["closed"]
    assert "char-usb_device rw" in settings["DeviceAllow"]  # /dev/bus/usb/* (libusb)
    assert "char-usb rw" in settings["DeviceAllow"]  # /dev/usb/lp* (usblp)
    assert "AF_NETLINK" in settings["RestrictAddressFamilies"][0]  # libusb hotplug monitor
    # a user namespace would leave group lp unmapped, and the printer unreadable
    assert "PrivateUsers" not in settings and "PrivateDevices" not in settings


# PR_SET_MDWE (Linux 6.3+) refuses writable+executable memory the way
# MemoryDenyWriteExecute=yes does, and survives exec: run the real code under it.
UNDER_MDWE = textwrap.dedent(
    """
    import ctypes, os, sys
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(65, 1, 0, 0, 0) != 0:  # PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN
        sys.exit(f"PR_SET_MDWE failed (errno {ctypes.get_errno()}): kernel older than 6.3?")
    os.execv(sys.argv[1], sys.argv[1:])
    """
)

AGENT_IMPORT_GRAPH = textwrap.dedent(
    """
    import mmap
    try:
        mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
        raise SystemExit("MDWE not in force")
    except PermissionError:
        pass
    import ctypes, usb.core, pypdfium2, PIL.Image, h11, aiosqlite, ifaddr
    import badgeline.agent.printers, badgeline.badge, badgeline.discovery
    try:  # libusb initialises (its hotplug monitor included)
        list(usb.core.find(find_all=True))
    except usb.core.NoBackendError:
        raise SystemExit("libusb is missing: apt-get install -y libusb-1.0-0")
    document = pypdfium2.PdfDocument.new()
    document.new_page(200, 100)
    assert document[0].render(scale=2).to_pil().size == (400, 200)
    ifaddr.get_adapters()
    assert ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)(lambda x: x + 1)(1) == 2
    print("ok")
    """
)


def test_the_agent_code_runs_without_writable_executable_memory() -> None:
    # GIVEN a process that may never map memory writable and executable
    # WHEN it imports the agent, starts libusb, renders a PDF page and enumerates interfaces
    result = subprocess.run(
        [sys.executable, "-c", UNDER_MDWE, sys.executable, "-c", AGENT_IMPORT_GRAPH],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    # THEN it all works, so MemoryDenyWriteExecute=yes is safe for the agent unit
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("ok")


def test_valkey_server_serves_without_writable_executable_memory(tmp_path: Path) -> None:
    # GIVEN the Redis server the coordinator embeds, started under the same restriction
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-c", UNDER_MDWE, find_server_binary(), "--port", str(port),
         "--bind", "127.0.0.1", "--dir", str(tmp_path), "--appendonly", "yes", "--save", ""],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        # WHEN the coordinator's client writes and reads through it
        client = Redis(port=port, socket_timeout=5)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except RedisConnectionError:
                assert time.monotonic() < deadline, "valkey-server did not start under MDWE"
                time.sleep(0.05)
        client.set("badgeline:mdwe", "ok")
        # THEN it serves (and its AOF rewrite, a fork, works too)
        assert client.get("badgeline:mdwe") == b"ok"
        assert client.bgrewriteaof()
        client.close()
    finally:
        server.terminate()
        server.wait(timeout=10)
