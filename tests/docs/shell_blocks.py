"""The shell blocks of a doc, as a person would type them, run for real.

A block to run carries a marker on the line before its fence:

    <!-- test: laptop -->             run on the machine called "laptop"
    <!-- test: server; then boot X -->  run on "server", then the test's hook `boot X`
    <!-- test: skip: REASON -->       not run (the reason says why)
    <!-- test: output -->            (a plain block) what the block before printed

Every `sh` block must carry one, so a new block cannot slip past the test.
Each machine is a folder and an environment; a block runs in bash with
`set -euo pipefail` and `set -a`, so what one block sets (variables, the
folder it moved to) is there in the next block on that machine, as in a
person's terminal.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.MULTILINE | re.DOTALL)
MARKER = re.compile(r"<!-- test: (.+?) -->\n$")


@dataclass(frozen=True)
class Block:
    machine: str  # a machine's name, "skip" or "output"
    code: str
    hook: str | None = None  # what the test does after running it
    line: int = 0  # where it starts in the doc, for failure messages


def shell_blocks(text: str) -> list[Block]:
    """The doc's marked blocks in order; an `sh` block without a marker is an error."""
    blocks = []
    for match in FENCE.finditer(text):
        before = text[: match.start()]
        line = before.count("\n") + 1
        marker = MARKER.search(before[-200:])
        language, code = match.group(1), match.group(2)
        if marker is None:
            assert language != "sh", f"line {line}: a sh block without a <!-- test: … --> marker"
            continue
        what = marker.group(1)
        if what.startswith("skip:"):
            blocks.append(Block("skip", code, line=line))
            continue
        machine, _, then = what.partition("; then ")
        blocks.append(Block(machine.strip(), code, then or None, line))
    return blocks


@dataclass
class Machine:
    """A folder standing in for one machine, and the shell state its blocks leave."""

    name: str
    home: Path
    start_dir: Path
    env: dict[str, str]
    preamble: str = ""  # shell functions standing in for what this machine lacks
    state: Path = field(init=False)

    def __post_init__(self) -> None:
        self.state = self.home.parent / f".{self.name}.state.sh"
        self.state.write_text(f"cd {self.start_dir}\n")

    def run(self, code: str, line: int, timeout_s: float = 300) -> str:
        """Run `code` as the next block typed on this machine; its stdout, or a failure
        with everything it printed."""
        script = "\n".join([
            "set -euo pipefail", "set -a", f"source {self.state}", self.preamble, code,
            f"{{ export -p; printf 'cd %q\\n' \"$PWD\"; }} > {self.state}.new",
            f"mv {self.state}.new {self.state}",
        ])  # fmt: skip
        done = subprocess.run(["bash", "-c", script], env={**self.env, "HOME": str(self.home)},
                              capture_output=True, text=True, timeout=timeout_s)  # fmt: skip
        assert done.returncode == 0, (
            f"the {self.name} block at line {line} failed ({done.returncode}):\n{code}\n"
            f"--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
        )
        return done.stdout
