"""What the agent's modules import: on a Pi its idle memory is budgeted (45 MB).

pydantic's plugin discovery would load importlib.metadata (2.2 MB) into the
agent; badgeline/agent/pydantic_plugins.py keeps it out while plugins are
disabled. These run in a fresh interpreter, as the agent does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

PROBE = """
import argparse, json, os, sys
import badgeline.agent.main, badgeline.agent.service
from badgeline.cli import _HelpFormatter

# As `badgeline agent` builds its command line (argparse's own formatter imports shutil).
parser = argparse.ArgumentParser(prog="badgeline agent", formatter_class=_HelpFormatter)
badgeline.agent.main.add_arguments(parser)
from pydantic import ValidationError
from badgeline.agent.journal.schema import load_migrations
from badgeline.protocol.agent_models import StartRequest

refused = False
try:
    StartRequest.model_validate({"lease_id": ""})
except ValidationError:
    refused = True
print(json.dumps({
    "imported": sorted(set(sys.argv[1:]) & set(sys.modules)),
    "valid": StartRequest.model_validate({"lease_id": " l-1"}).lease_id,
    "refused": refused,
    "migrations": [m.version for m in load_migrations()],
    "switch": os.environ.get("PYDANTIC_DISABLE_PLUGINS"),
}))
"""
HEAVY = [
    "importlib.metadata",
    "email",
    "zipfile",
    "tempfile",
    "importlib.resources",
    "shutil",
    "prometheus_client",
]


def _probe(switch: str | None) -> dict[str, object]:
    env = {key: value for key, value in os.environ.items() if key != "PYDANTIC_DISABLE_PLUGINS"}
    if switch is not None:
        env["PYDANTIC_DISABLE_PLUGINS"] = switch
    out = subprocess.run(
        [sys.executable, "-c", PROBE, *HEAVY],
        env=env, capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    result: dict[str, object] = json.loads(out)
    return result


def test_the_agent_loads_no_package_metadata_and_its_models_still_validate() -> None:
    # GIVEN an environment that says nothing about pydantic plugins
    # WHEN the agent's modules are imported in a fresh interpreter
    result = _probe(None)
    # THEN none of the heavy modules were loaded, plugins are off for the agent
    # and its children, and pydantic models still accept and refuse as before
    assert result["imported"] == []
    assert result["switch"] == "__all__"
    assert result["valid"] == "l-1"  # stripped, as the strict models do
    assert result["refused"] is True
    # and the journal's migrations are still found without importlib.resources
    assert result["migrations"] == [1, 2]


def test_an_agent_told_to_keep_pydantic_plugins_uses_pydantic_s_own_loader() -> None:
    # GIVEN an operator who wants pydantic plugins (an empty list disables none)
    result = _probe("")
    # THEN the agent leaves pydantic's loader alone, which reads package metadata
    assert "importlib.metadata" in result["imported"]  # type: ignore[operator]
    assert result["switch"] == ""
    assert result["refused"] is True
