"""`badgeline agent` as its own process, and what the field tests around it share.

mDNS names are network-wide (here: loopback-wide), and other test runs may
share this machine, so every test that puts an agent on mDNS gives it a
printer id of its own, with an agent token the test's coordinator accepts.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import signal
import sys
from pathlib import Path
from typing import Any

from badgeline.coordinator.auth import token_digest
from badgeline.coordinator.config import CoordinatorSettings, TokenEntry
from badgeline.emulator import PrinterEmulator
from tests.conftest import agent_token

LOOPBACK = ["127.0.0.1"]


def unique_printer_id() -> str:
    return "printer-" + secrets.token_hex(6)


def unique_venue() -> str:
    return "hall-" + secrets.token_hex(5)


def accepting(settings: CoordinatorSettings, printer_id: str) -> CoordinatorSettings:
    """The coordinator's settings plus an agent token for `printer_id` (see agent_token)."""
    entry = TokenEntry(name=f"agent-{printer_id}", role="agent", printer_id=printer_id,
                       sha256=token_digest(agent_token(printer_id)))  # fmt: skip
    return settings.model_copy(update={"tokens": [*settings.tokens, entry]})


def emulator_table(emulator: PrinterEmulator) -> dict[str, Any]:
    return {"kind": "emulator", "host": "127.0.0.1", "port": emulator.port, "timeout_s": 0.5}


def write_agent_toml(path: Path, printer: dict[str, Any], **values: Any) -> Path:
    """A TOML file from flat values plus the [printer] table (JSON strings are TOML strings)."""
    lines = [f"{key} = {_toml(value)}" for key, value in values.items() if value is not None]
    lines += ["[printer]", *(f"{key} = {_toml(value)}" for key, value in printer.items())]
    path.write_text("\n".join(lines) + "\n")
    return path


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    return json.dumps(str(value))


class AgentProcess:
    """`python -m badgeline.cli agent --config …`, stopped with SIGTERM like systemd does."""

    def __init__(self, config: Path, env: dict[str, str] | None = None) -> None:
        self.config = config
        self.env = env
        # A file, not a pipe: nobody has to keep reading it for the agent to keep going.
        self.log = config.with_suffix(".log")
        self.process: asyncio.subprocess.Process | None = None

    async def start(self) -> AgentProcess:
        with self.log.open("wb") as log:
            self.process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "badgeline.cli", "agent", "--config", str(self.config),
                stdout=asyncio.subprocess.DEVNULL, stderr=log, env=self.env,
            )  # fmt: skip
        return self

    async def terminate(self, timeout_s: float = 30.0) -> int:
        """SIGTERM, then the exit code."""
        assert self.process is not None
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
        return await asyncio.wait_for(self.process.wait(), timeout_s)

    def events(self) -> list[dict[str, Any]]:
        lines = self.log.read_text(errors="replace").splitlines()
        return [json.loads(line) for line in lines if line.startswith("{")]

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]

    async def kill(self) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.kill()
            with contextlib.suppress(ProcessLookupError):
                await self.process.wait()
