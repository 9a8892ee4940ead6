"""Write the agent's config and first-boot installer into a Pi OS image file."""

from __future__ import annotations

import ssl
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from badgeline.agent.config import AgentSettings
from badgeline.provision.agent_config import AgentConfig, render_agent_toml
from badgeline.provision.assets import load_assets
from badgeline.provision.boot import (
    BootSystem,
    ProvisionError,
    Wifi,
    cmdline_with_firstrun,
    detect_boot_system,
    firstrun_block,
    firstrun_with_block,
    network_config,
    user_data_with_runcmd,
)
from badgeline.provision.image import BootPartition
from badgeline.toml_env import describe_validation_error

FOLDER = "/badgeline"
CA_FILE_NAME = "coordinator-ca.pem"  # install-agent.sh looks for it under this name
Progress = Callable[[str], None]


@dataclass(frozen=True)
class ProvisionRequest:
    image: Path
    agent: AgentConfig
    wheels: list[Path]
    wifi: Wifi | None = None
    boot_system: BootSystem | None = None  # None: detect from the image
    coordinator_ca: Path | None = None  # PEM the agent trusts for an https coordinator


@dataclass
class ProvisionResult:
    boot_system: BootSystem
    written: list[str] = field(default_factory=list)


def check_wheels(wheels: list[Path]) -> None:
    missing = [str(w) for w in wheels if not w.is_file()]
    if missing:
        raise ProvisionError(f"wheel not found: {', '.join(missing)}")
    if not any(w.name.startswith("badgeline-") and w.suffix == ".whl" for w in wheels):
        raise ProvisionError(
            "no badgeline-*.whl among --wheel: build one with `python -m pip wheel --no-deps "
            "-w dist .` in the checkout"
        )


def check_ca_bundle(path: Path | None) -> None:
    if path is None:
        return
    try:
        ssl.create_default_context().load_verify_locations(cafile=str(path))
    except (OSError, ssl.SSLError) as error:
        raise ProvisionError(f"--coordinator-ca {path}: not a PEM certificate: {error}") from None


def check_agent_config(text: str) -> None:
    """Refuse here what the agent would refuse at its first start on the Pi (exit 2).

    Found there only after flashing and a first boot, e.g. a --coordinator-url
    without http:// or a printer port past 65535.
    """
    values = tomllib.loads(text)
    values.pop("coordinator_ca_file", None)  # a path on the Pi; check_ca_bundle checks the PEM
    try:
        AgentSettings.model_validate(values)
    except ValidationError as error:
        raise ProvisionError(
            describe_validation_error(error, "the agent.toml it would write", "agent")
        ) from None


def provision(request: ProvisionRequest, progress: Progress = print) -> ProvisionResult:
    check_wheels(request.wheels)
    check_ca_bundle(request.coordinator_ca)
    agent_toml = render_agent_toml(request.agent)
    check_agent_config(agent_toml)
    assets = load_assets()
    with BootPartition(request.image) as boot:
        progress(
            f"boot partition {boot.partition.index}: {boot.partition.size // 2**20} MiB "
            f"at byte {boot.partition.offset}"
        )
        system = request.boot_system or detect_boot_system(
            boot.listdir("/"), boot.read_text("/issue.txt") if boot.exists("/issue.txt") else None
        )
        progress(f"first boot runs {system.value}")
        result = ProvisionResult(system)

        def write(path: str, data: bytes) -> None:
            progress(f"writing {path} ({_size(len(data))})")
            boot.write_bytes(path, data)
            result.written.append(path)

        write(f"{FOLDER}/agent.toml", agent_toml.encode())
        for name, data in assets.items():
            write(f"{FOLDER}/{name}", data)
        # A re-run with a newer wheel must not leave the old one for the installer to pick.
        for old in boot.listdir(f"{FOLDER}/wheels"):
            boot.remove(f"{FOLDER}/wheels/{old}")
        for wheel in request.wheels:
            write(f"{FOLDER}/wheels/{wheel.name}", wheel.read_bytes())
        if request.coordinator_ca is not None:
            write(f"{FOLDER}/{CA_FILE_NAME}", request.coordinator_ca.read_bytes())
        elif boot.exists(f"{FOLDER}/{CA_FILE_NAME}"):
            boot.remove(f"{FOLDER}/{CA_FILE_NAME}")  # a re-run without it: nothing stale
        if system is BootSystem.FIRSTRUN:
            _hook_firstrun(boot, request.wifi, write)
        else:
            _hook_cloud_init(boot, request.wifi, write)
    progress(f"done: {len(result.written)} files on {request.image.name}; flash it and boot the Pi")
    return result


def _hook_firstrun(
    boot: BootPartition, wifi: Wifi | None, write: Callable[[str, bytes], None]
) -> None:
    if not boot.exists("/cmdline.txt"):
        raise ProvisionError("cmdline.txt is missing: not a Bookworm boot partition")
    write("/cmdline.txt", cmdline_with_firstrun(boot.read_text("/cmdline.txt")).encode())
    existing = boot.read_text("/firstrun.sh") if boot.exists("/firstrun.sh") else None
    write("/firstrun.sh", firstrun_with_block(existing, firstrun_block(wifi)).encode())


def _hook_cloud_init(
    boot: BootPartition, wifi: Wifi | None, write: Callable[[str, bytes], None]
) -> None:
    existing = boot.read_text("/user-data") if boot.exists("/user-data") else None
    write("/user-data", user_data_with_runcmd(existing).encode())
    if not boot.exists("/meta-data"):
        # cloud-init's NoCloud source needs meta-data to exist, even empty.
        write("/meta-data", b"instance-id: badgeline-agent\n")
    if wifi is not None:
        write("/network-config", network_config(wifi).encode())


def _size(count: int) -> str:
    if count >= 2**20:
        return f"{count / 2**20:.1f} MiB"
    if count >= 1024:
        return f"{count / 1024:.1f} KiB"
    return f"{count} B"
