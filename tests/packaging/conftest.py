"""The wheel as a packager gets it: built from the tracked files, installed in a fresh venv.

One wheel build and one venv for every test here (each costs seconds, with pip's
cache). The venv is made without pip, and the test run's own pip installs into it
(`pip --python`), so what it lists afterwards is exactly what the extras pulled in.
The venv first gets `badgeline[agent]`, whose distributions are recorded then; the
provision extra is added afterwards for the provisioning tests.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
# Read in the venv: every installed distribution, and which one provides each
# top-level module name.
LIST_DISTRIBUTIONS = """
import importlib.metadata as metadata, json
print(json.dumps({
    "distributions": sorted({d.metadata["Name"] for d in metadata.distributions()}),
    "providers": metadata.packages_distributions(),
}))
"""


@dataclass(frozen=True)
class BuiltWheel:
    path: Path
    build_log: str


@dataclass(frozen=True)
class InstalledWheel:
    wheel: BuiltWheel
    venv: Path
    workdir: Path  # outside the checkout: the checkout's badgeline must not be importable
    agent_distributions: list[str]  # right after `pip install wheel[agent]`
    agent_providers: dict[str, list[str]]  # top-level module -> distributions, then

    @property
    def badgeline(self) -> Path:
        return self.venv / "bin" / "badgeline"

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            list(args), capture_output=True, text=True, timeout=timeout, cwd=self.workdir,
            env=clean_environment(),
        )  # fmt: skip


def clean_environment() -> dict[str, str]:
    """This run's environment without what would point Python at the checkout."""
    dropped = {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP"}
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def tracked_copy(destination: Path) -> Path:
    """The files git knows of (tracked, or new and not ignored): what a packager's
    clean checkout has, without .venv, build/ or a stale egg-info that setuptools
    would pick up from the working tree."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=REPO_ROOT, capture_output=True, check=True,
    ).stdout.decode().split("\0")  # fmt: skip
    for name in filter(None, listed):
        source = REPO_ROOT / name
        if source.is_file():  # a file deleted in the working tree is still listed
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)
    return destination


def pip(*args: str, timeout: float = 480) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "pip", *args], capture_output=True, text=True,
        timeout=timeout, env=clean_environment(),
    )  # fmt: skip
    assert result.returncode == 0, f"pip {' '.join(args)}:\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="session")
def built_wheel(tmp_path_factory: pytest.TempPathFactory) -> BuiltWheel:
    # As docs/field-install.md builds it; -v shows the build backend's own output,
    # where setuptools prints its deprecation warnings.
    source = tracked_copy(tmp_path_factory.mktemp("source"))
    dist = tmp_path_factory.mktemp("dist")
    built = pip("wheel", "--no-deps", "-v", "-w", str(dist), str(source))
    wheels = sorted(dist.glob("badgeline-*.whl"))
    assert len(wheels) == 1, wheels
    return BuiltWheel(wheels[0], built.stdout + built.stderr)


@pytest.fixture(scope="session")
def installed_wheel(
    built_wheel: BuiltWheel, tmp_path_factory: pytest.TempPathFactory
) -> InstalledWheel:
    root = tmp_path_factory.mktemp("packager")
    venv = root / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120
    )
    python = str(venv / "bin" / "python")
    pip("--python", python, "install", f"{built_wheel.path}[agent]")
    listed = subprocess.run(
        [python, "-I", "-c", LIST_DISTRIBUTIONS], capture_output=True, text=True, check=True,
        cwd=root, timeout=60,
    )  # fmt: skip
    agent = json.loads(listed.stdout)
    pip("--python", python, "install", f"{built_wheel.path}[provision]")
    workdir = root / "work"
    workdir.mkdir()
    return InstalledWheel(built_wheel, venv, workdir, agent["distributions"], agent["providers"])
