"""`pip install badgeline[agent]` brings what the agent imports, and nothing else.

A Pi carries every distribution the extra pulls in (SD card, install time, and
what a bundled wheelhouse holds), so the installed set is an allow-list: a new
dependency, direct or transitive, fails here until it is listed with its reason.
"""

from __future__ import annotations

import ast
import re
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

from tests.packaging.conftest import REPO_ROOT, InstalledWheel

pytestmark = pytest.mark.timeout(600)  # the first install fills pip's cache
PACKAGE = REPO_ROOT / "badgeline"

# Every distribution `pip install badgeline[agent]` installs, and why.
AGENT_DISTRIBUTIONS = {
    "badgeline": "the agent itself",
    "pydantic": "typed config, wire models",
    "pydantic-core": "pydantic's core",
    "annotated-types": "required by pydantic",
    "typing-extensions": "required by pydantic",
    "typing-inspection": "required by pydantic",
    "h11": "HTTP/1.1 to the coordinator and for the status endpoint",
    "aiosqlite": "the journal",
    "pyusb": "USB printers (libusb)",
    "python-escpos": "USB link and printer profiles (escpos_profile)",
    "pillow": "rasterising badges, the test print",
    "pypdfium2": "reading badge PDFs",
    "zeroconf": "mDNS: advertising the agent, finding the coordinator",
    "ifaddr": "required by zeroconf; the agent lists interfaces with it",
    # python-escpos 3.1 requires these whatever it is used for. escpos.printer
    # imports the first five; the last three it never imports for the agent (its
    # command line, an old config-path helper, a packaging dependency), but pip
    # has no way to leave out a dependency's dependency.
    "qrcode": "imported by python-escpos",
    "python-barcode": "imported by python-escpos",
    "pyyaml": "imported by python-escpos (capabilities database)",
    "six": "imported by python-escpos",
    "importlib-resources": "imported by python-escpos",
    "argcomplete": "required by python-escpos (its CLI); not imported",
    "appdirs": "required by python-escpos; not imported",
    "setuptools": "required by python-escpos; not imported",
}


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _module_file(name: str) -> Path | None:
    base = PACKAGE.parent.joinpath(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _imported_names(path: Path, module: str) -> set[str]:
    """Every module this file imports anywhere (in functions too, by importlib with a
    literal name too), `from a import b` counted as `a` and `a.b`."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.add(node.args[0].value)
    return found


def agent_third_party_imports() -> set[str]:
    """Top-level names of the non-badgeline modules the agent's code can import: every
    module of badgeline/agent/ and whatever badgeline module they reach, transitively."""
    pending = [
        ".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        for p in (PACKAGE / "agent").rglob("*.py")
    ]
    seen: set[str] = set()
    outside: set[str] = set()
    while pending:
        module = pending.pop()
        if module in seen:
            continue
        seen.add(module)
        parts = module.split(".")
        pending += [".".join(parts[:n]) for n in range(1, len(parts))]  # parents run first
        path = _module_file(module)
        if path is None:
            continue
        for name in _imported_names(path, module):
            if name.split(".")[0] == "badgeline":
                if _module_file(name) is not None:
                    pending.append(name)
            else:
                outside.add(name.split(".")[0])
    return {name for name in outside if name not in sys.stdlib_module_names}


def agent_requirements(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        text = archive.read("badgeline-0.1.0.dist-info/METADATA").decode()
    requirements = Parser().parsestr(text, headersonly=True).get_all("Requires-Dist") or []
    wanted = [r for r in requirements if "extra ==" not in r or 'extra == "agent"' in r]
    return {normalized(re.split(r"[\s<>=!~;\[]", r, maxsplit=1)[0]) for r in wanted}


def test_the_agent_extra_installs_only_the_allowed_distributions(
    installed_wheel: InstalledWheel,
) -> None:
    # GIVEN a fresh venv into which `pip install badgeline-*.whl[agent]` went
    installed = {normalized(name) for name in installed_wheel.agent_distributions}
    # THEN it holds exactly the allow-list: no aiohttp (nor its 7 companions), no redis
    assert "aiohttp" not in installed
    unexpected = sorted(installed - AGENT_DISTRIBUTIONS.keys())
    missing = sorted(AGENT_DISTRIBUTIONS.keys() - installed)
    assert (unexpected, missing) == ([], [])


def test_the_agent_imports_every_requirement_of_its_extra_and_has_each_it_imports(
    installed_wheel: InstalledWheel,
) -> None:
    # GIVEN what the agent's code imports, and which installed distribution provides each
    providers = {
        module: {normalized(d) for d in names}
        for module, names in installed_wheel.agent_providers.items()
    }
    imported = agent_third_party_imports()
    # THEN every module it imports is installed by the extra (a lazy import included)
    assert sorted(m for m in imported if m not in providers) == []
    # AND every direct requirement of the extra is a distribution the agent imports
    used = {d for m in imported for d in providers[m]}
    assert sorted(agent_requirements(installed_wheel.wheel.path) - used) == []


def test_the_agent_command_runs_from_the_installed_wheel(installed_wheel: InstalledWheel) -> None:
    # WHEN `badgeline agent --help` runs from the venv
    result = installed_wheel.run(str(installed_wheel.badgeline), "agent", "--help")
    # THEN it prints its options (its whole import chain loaded)
    assert result.returncode == 0, result.stderr
    assert "--config" in result.stdout and result.stderr == ""
    # AND the coordinator, whose extra is not installed there, says which extra it needs
    coordinator = installed_wheel.run(str(installed_wheel.badgeline), "coordinator", "--help")
    assert coordinator.returncode == 2
    assert coordinator.stderr.strip() == (
        "badgeline coordinator: aiohttp is not installed; "
        "install the coordinator extra: pip install 'badgeline[coordinator]'"
    )
