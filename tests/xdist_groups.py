"""Tests that share a machine-wide resource run on one worker, the rest anywhere.

`./dev test` runs the suite in pytest-xdist workers. Its own `loadgroup` keeps the
tests marked `xdist_group` together by renaming their node ids, which pytest 9 no
longer lets a plugin do, so the grouping is made here: the controller reads which
test modules carry the mark, and a scope scheduler treats each such group as one
unit of work and every other module as a unit of its own.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from xdist.scheduler import LoadScopeScheduling

_GROUP_MARK = re.compile(r'^pytestmark = pytest\.mark\.xdist_group\("([\w-]+)"\)$', re.MULTILINE)


def module_groups(root: Path, tests: Path) -> dict[str, str]:
    """Each test module (its path as node ids begin) that is in a group: the group."""
    groups = {}
    for path in tests.rglob("test_*.py"):
        found = _GROUP_MARK.search(path.read_text(encoding="utf-8"))
        if found:
            groups[path.relative_to(root).as_posix()] = found.group(1)
    return groups


class GroupScheduling(LoadScopeScheduling):
    """A grouped module goes with its group; any other module is a unit of its own (its
    module- and package-scoped fixtures, a venue of real processes or a Prometheus, are
    then set up once, not once on each worker)."""

    def __init__(self, config: Any, log: Any, groups: dict[str, str]) -> None:
        super().__init__(config, log)
        self._groups = groups

    def _split_scope(self, nodeid: str) -> str:
        module = nodeid.split("::", 1)[0]
        group = self._groups.get(module)
        return f"group:{group}" if group else module
