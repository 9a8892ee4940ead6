"""`pip install badgeline[kiosk]` brings what the kiosk library imports, and nothing else.

A kiosk integrator installs the library on a desk's machine beside their own app: its
installed set is an allow-list, and in that fresh venv, without aiohttp or redis, a
Kiosk keeps a scan and imports none of the coordinator's stack.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.packaging.conftest import LIST_DISTRIBUTIONS, REPO_ROOT, BuiltWheel, pip
from tests.packaging.test_agent_extra import _imported_names, _module_file, normalized

pytestmark = pytest.mark.timeout(600)  # the first install fills pip's cache
PACKAGE = REPO_ROOT / "badgeline"

# Every distribution `pip install badgeline[kiosk]` installs, and why.
KIOSK_DISTRIBUTIONS = {
    "badgeline": "the kiosk library",
    "pydantic": "the scan's checks (the job model), typed settings",
    "pydantic-core": "pydantic's core",
    "annotated-types": "required by pydantic",
    "typing-extensions": "required by pydantic",
    "typing-inspection": "required by pydantic",
    "zeroconf": "finding the coordinator on mDNS (discover=True)",
    "ifaddr": "required by zeroconf; badgeline.discovery lists interfaces with it",
}
# Run in the kiosk's venv: a Kiosk keeps a scan with no coordinator to reach, and
# says which heavy modules that loaded.
PROBE = """
import json, socket, sys, tempfile
from pathlib import Path
from badgeline.kiosk import Kiosk
held = socket.socket(); held.bind(("127.0.0.1", 0))
with Kiosk(coordinator_urls=f"http://127.0.0.1:{held.getsockname()[1]}", token="t",
           outbox_path=Path(tempfile.mkdtemp()) / "outbox.sqlite3") as kiosk:
    ticket = kiosk.submit("att_0001", b"%PDF-1.4 a badge", "printer-a")
    delivery = kiosk.status(ticket, refresh=False).delivery
heavy = ["aiohttp", "redis", "zeroconf", "badgeline.coordinator", "badgeline.agent"]
print(json.dumps({"delivery": delivery, "loaded": [m for m in heavy if m in sys.modules]}))
"""


@dataclass(frozen=True)
class KioskVenv:
    python: Path
    distributions: list[str]
    providers: dict[str, list[str]]
    workdir: Path


@pytest.fixture(scope="module")
def kiosk_venv(built_wheel: BuiltWheel, tmp_path_factory: pytest.TempPathFactory) -> KioskVenv:
    root = tmp_path_factory.mktemp("kiosk-integrator")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)  # fmt: skip
    python = venv / "bin" / "python"
    pip("--python", str(python), "install", f"{built_wheel.path}[kiosk]")
    listed = subprocess.run([str(python), "-I", "-c", LIST_DISTRIBUTIONS], capture_output=True,
                            text=True, check=True, cwd=root, timeout=60)  # fmt: skip
    found = json.loads(listed.stdout)
    return KioskVenv(python, found["distributions"], found["providers"], root)


def kiosk_third_party_imports() -> set[str]:
    """Top-level names of the non-badgeline modules the kiosk's code can import: every
    module of badgeline/kiosk/ and the badgeline modules they reach, transitively."""
    pending = [".".join(p.relative_to(REPO_ROOT).with_suffix("").parts).removesuffix(".__init__")
               for p in (PACKAGE / "kiosk").rglob("*.py")]  # fmt: skip
    seen: set[str] = set()
    outside: set[str] = set()
    while pending:
        module = pending.pop()
        if module in seen:
            continue
        seen.add(module)
        parts = module.split(".")
        pending += [".".join(parts[:n]) for n in range(1, len(parts))]
        path = _module_file(module)
        if path is None:
            continue
        for name in _imported_names(path, module):
            if name.split(".")[0] != "badgeline":
                outside.add(name.split(".")[0])
            elif _module_file(name) is not None:
                pending.append(name)
    return {name for name in outside if name not in sys.stdlib_module_names}


def test_the_kiosk_extra_installs_only_the_allowed_distributions(kiosk_venv: KioskVenv) -> None:
    installed = {normalized(name) for name in kiosk_venv.distributions}
    assert not {"aiohttp", "redis", "hiredis"} & installed
    unexpected = sorted(installed - KIOSK_DISTRIBUTIONS.keys())
    missing = sorted(KIOSK_DISTRIBUTIONS.keys() - installed)
    assert (unexpected, missing) == ([], [])


def test_the_kiosk_has_every_module_it_imports(kiosk_venv: KioskVenv) -> None:
    imported = kiosk_third_party_imports()
    assert {"pydantic", "zeroconf"} <= imported
    assert sorted(m for m in imported if m not in kiosk_venv.providers) == []


def test_a_kiosk_keeps_a_scan_from_the_installed_wheel_without_the_coordinator_stack(
    kiosk_venv: KioskVenv,
) -> None:
    result = subprocess.run([str(kiosk_venv.python), "-I", "-c", PROBE], capture_output=True,
                            text=True, timeout=60, cwd=kiosk_venv.workdir)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"delivery": "pending", "loaded": []}
