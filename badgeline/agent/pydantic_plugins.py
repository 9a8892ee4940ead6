"""Keep pydantic's plugin discovery from loading `importlib.metadata` into the agent.

The first time pydantic builds a model's validator it asks its plugin loader
for plugins (entry points of the `pydantic` group). That loader module imports
`importlib.metadata` at its top, which brings in email, zipfile, csv, tempfile
and more: 2.2 MB of resident memory (measured with bench/bench_agent.py's
method) out of the agent's 45 MB budget on a Raspberry Pi, for plugins the
agent never has. pydantic's documented switch `PYDANTIC_DISABLE_PLUGINS=__all__`
makes the loader return no plugins, but only after that import has happened.

So the agent sets the switch, unless its environment already chose a value,
and while every plugin is disabled it registers, in place of the loader
module, a stand-in whose `get_plugins()` returns what pydantic's own returns
under the switch: nothing. An operator who wants a pydantic plugin in the
agent sets `PYDANTIC_DISABLE_PLUGINS` to anything else (an empty string
disables none) and gets pydantic's real loader.

This must run before the first model class is defined; `agent/main.py` calls
it before importing anything that defines one. tests/agent/test_lean_imports.py
checks that the agent's modules then import without `importlib.metadata` and
that their models still validate, so a pydantic release that moves the loader
shows up as a failing test, not as a silent change.
"""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Iterable
from typing import Any

SWITCH = "PYDANTIC_DISABLE_PLUGINS"
LOADER_MODULE = "pydantic.plugin._loader"
# The values pydantic's loader reads as "every plugin disabled".
_ALL_DISABLED = frozenset({"__all__", "1", "true"})


def _no_plugins() -> Iterable[Any]:
    return ()


def skip_plugin_discovery() -> bool:
    """Disable pydantic plugins unless the environment chose otherwise; True when
    the stand-in loader is in place (False: plugins wanted, or too late)."""
    os.environ.setdefault(SWITCH, "__all__")
    if os.environ[SWITCH] not in _ALL_DISABLED or LOADER_MODULE in sys.modules:
        return False
    stand_in = types.ModuleType(LOADER_MODULE, "badgeline's stand-in: every plugin disabled")
    stand_in.get_plugins = _no_plugins  # type: ignore[attr-defined]
    sys.modules[LOADER_MODULE] = stand_in
    return True
