"""The tree keeps the design's boundaries (docs/architecture.md, "The layout of the tree").

- coordinator/store/ is the only code that speaks Redis; it imports neither
  coordinator/api/ nor coordinator/control/;
- coordinator/control/ imports coordinator/store/, never coordinator/api/;
- a route module of coordinator/api/ never imports another route module;
- nothing outside the store reaches into its Redis client or calls a script by name;
- the agent imports nothing from the coordinator, redis or aiohttp (a Pi carries neither);
- the kiosk library imports nothing from the coordinator, the agent, redis or aiohttp
  (an integrator's kiosk carries the standard library and pydantic), and zeroconf only
  in its discovery module, which it loads only when asked to find the coordinator;
- no module is longer than 400 lines (the emulator's language packages included).

Read from the source with `ast`: a rule broken in a branch that a test run never
imports is still broken.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "badgeline"
COORDINATOR = PACKAGE / "coordinator"
MAX_MODULE_LINES = 400


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.py"))


def _imports(path: Path) -> set[str]:
    """Every module this file imports, anywhere in it (also inside functions), with
    `from a import b` counted as both `a` and `a.b` (b may be a module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def _breaks(paths: list[Path], forbidden: tuple[str, ...]) -> list[str]:
    return [
        f"{path.relative_to(PACKAGE.parent)} imports {name}"
        for path in paths
        for name in sorted(_imports(path))
        if any(name == f or name.startswith(f + ".") for f in forbidden)
    ]


def _route_modules() -> list[Path]:
    """The api modules that register routes."""
    pattern = re.compile(r"RouteTableDef\(\)|\.router\.add_(get|post|put|delete|route)\(")
    return [p for p in _modules(COORDINATOR / "api") if pattern.search(p.read_text())]


def test_the_store_imports_neither_the_api_nor_control() -> None:
    assert (
        _breaks(
            _modules(COORDINATOR / "store"),
            ("badgeline.coordinator.api", "badgeline.coordinator.control"),
        )
        == []
    )


def test_control_imports_the_store_never_the_api() -> None:
    assert _breaks(_modules(COORDINATOR / "control"), ("badgeline.coordinator.api",)) == []


def test_a_route_module_never_imports_another_route_module() -> None:
    routes = _route_modules()
    assert len(routes) >= 10  # the rule is checked on something
    names = tuple(_module_name(p) for p in routes)
    for path in routes:
        others = tuple(n for n in names if n != _module_name(path))
        assert _breaks([path], others) == []


def test_only_the_store_speaks_redis() -> None:
    outside = [p for p in _modules(PACKAGE) if COORDINATOR / "store" not in p.parents]
    assert _breaks(outside, ("redis", "hiredis")) == []
    # …and nothing reaches around the store's typed methods.
    reach = re.compile(r"\bstore\.(redis|scripts|_redis|_scripts)\b|_scripts\[")
    assert [str(p) for p in outside if reach.search(p.read_text())] == []


def test_the_agent_imports_nothing_from_the_coordinator_redis_or_aiohttp() -> None:
    agent = _modules(PACKAGE / "agent")
    assert len(agent) > 20
    assert _breaks(agent, ("badgeline.coordinator", "redis", "aiohttp")) == []


def test_the_kiosk_library_imports_nothing_from_the_coordinator_agent_redis_or_aiohttp() -> None:
    kiosk = _modules(PACKAGE / "kiosk")
    assert len(kiosk) > 8
    forbidden = ("badgeline.coordinator", "badgeline.agent", "redis", "aiohttp", "hiredis")
    assert _breaks(kiosk, forbidden) == []
    # zeroconf (through badgeline.discovery) only where mDNS is used, and only lazily:
    # a kiosk given its coordinator's URL does not load it.
    mdns = ("zeroconf", "badgeline.discovery")
    assert _breaks(kiosk, mdns) == [
        "badgeline/kiosk/discovery.py imports badgeline.discovery.coordinator",
        "badgeline/kiosk/discovery.py imports badgeline.discovery.coordinator.CoordinatorFollower",
    ]
    top_level = ast.parse((PACKAGE / "kiosk" / "discovery.py").read_text(encoding="utf-8"))
    assert not [node for node in top_level.body if isinstance(node, ast.ImportFrom)
                and (node.module or "").startswith(mdns)]  # fmt: skip


def test_no_module_is_longer_than_400_lines() -> None:
    long = {
        str(p.relative_to(PACKAGE.parent)): n
        for p in _modules(PACKAGE)
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}


# What makes a test use mDNS on loopback, which every test process shares: the mDNS
# tests' loopback interface list, their advertising peers, browsers and followers.
_MDNS_USE = re.compile(
    r"\bLOOPBACK\b|mdns_peer|CoordinatorFollower|AgentBrowser|find_coordinator|AsyncZeroconf"
)


def test_every_test_module_that_uses_mdns_runs_in_the_mdns_group() -> None:
    """Two test processes on one loopback hear each other's adverts and questions: the
    tests that use mDNS run one at a time, on one worker (pytest.mark.xdist_group)."""
    tests = Path(__file__).resolve().parent
    ungrouped = [
        str(path.relative_to(tests))
        for path in sorted(tests.rglob("test_*.py"))
        if path.name != Path(__file__).name
        and _MDNS_USE.search(text := path.read_text(encoding="utf-8"))
        and 'pytestmark = pytest.mark.xdist_group("mdns")' not in text
    ]
    assert ungrouped == []
