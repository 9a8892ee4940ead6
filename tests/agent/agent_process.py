"""`badgeline agent` as its own process, and what the field tests around it share.

mDNS names are network-wide (here: loopback-wide), and other test runs may
share this machine, so every test that puts an agent on mDNS gives it a
printer id of its own, with an agent token the test's coordinator accepts.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import resource
import secrets
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any

import aiohttp

from badgeline.agent.config import AgentSettings
from badgeline.coordinator.api.auth import token_digest
from badgeline.coordinator.config import CoordinatorSettings, TokenEntry
from badgeline.emulator import PrinterEmulator
from tests.conftest import agent_token

LOOPBACK = ["127.0.0.1"]
START_TIMEOUT_S = 30.0
# The longest agent log line the pipe reader takes in one piece (a traceback is one line).
_LINE_LIMIT = 1 << 20
_LIMITED_EXEC = (
    "import os, resource, sys;"
    " resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[1]), resource.RLIM_INFINITY));"
    " os.execv(sys.executable, [sys.executable, *sys.argv[2:]])"
)


def unique_printer_id() -> str:
    return "printer-" + secrets.token_hex(6)


def unique_venue() -> str:
    return "hall-" + secrets.token_hex(5)


def accepting(settings: CoordinatorSettings, printer_id: str) -> CoordinatorSettings:
    """The coordinator's settings plus an agent token for `printer_id` (see agent_token),
    the printer pre-registered: a job may name it before its agent first reports."""
    entry = TokenEntry(name=f"agent-{printer_id}", role="agent", printer_id=printer_id,
                       sha256=token_digest(agent_token(printer_id)))  # fmt: skip
    known = [*settings.known_printers, printer_id]
    return settings.model_copy(
        update={"tokens": [*settings.tokens, entry], "known_printers": known}
    )


def emulator_table(emulator: PrinterEmulator) -> dict[str, Any]:
    return {"kind": "emulator", "host": "127.0.0.1", "port": emulator.port, "timeout_s": 0.5}


def write_agent_toml(path: Path, printer: dict[str, Any], **values: Any) -> Path:
    """A TOML file from flat values plus the [printer] table (JSON strings are TOML strings).

    Badges may come from the tests' folders (under the temporary directory) and from
    this machine's servers, unless `values` say otherwise.
    """
    values = {"badge_file_roots": [tempfile.gettempdir()], "badge_http_hosts": ["127.0.0.1:*"],
              **values}  # fmt: skip
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

    def __init__(
        self,
        config: Path,
        env: dict[str, str] | None = None,
        *,
        log_through_pipe: bool = False,
        file_size_limit: int | None = None,
    ) -> None:
        self.config = config
        self.env = env
        # A file, not a pipe: nobody has to keep reading it for the agent to keep going.
        # With `log_through_pipe` the test reads a pipe into that file instead, as
        # journald reads a unit's output: an agent whose own files may not grow (a
        # full card) still gets every line out.
        self.log = config.with_suffix(".log")
        self.log_through_pipe = log_through_pipe
        # RLIMIT_FSIZE from the first instruction on: the kernel refuses to write any
        # file of the agent past this many bytes (see `limit_file_size`).
        self.file_size_limit = file_size_limit
        self.process: asyncio.subprocess.Process | None = None
        self._pump: asyncio.Task[None] | None = None

    async def start(self) -> AgentProcess:
        command = ["-m", "badgeline.cli", "agent", "--config", str(self.config)]
        if self.file_size_limit is not None:
            # Set in a Python that then becomes the agent (exec keeps the limit): no
            # preexec_fn, which is unsafe in this threaded test process.
            command = ["-c", _LIMITED_EXEC, str(self.file_size_limit), *command]
        with self.log.open("wb") as log:
            self.process = await asyncio.create_subprocess_exec(
                sys.executable, *command, stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE if self.log_through_pipe else log,
                env=self.env, limit=_LINE_LIMIT,
            )  # fmt: skip
        if self.process.stderr is not None:
            self._pump = asyncio.create_task(self._copy_log(self.process.stderr))
        return self

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def limit_file_size(self, limit: int | None) -> None:
        """From now on the kernel refuses to write any of the agent's files past `limit`
        bytes (0: any write at all), as on a full or read-only card; None lifts it.

        SQLite sees the refusal as a failed write (SQLITE_IOERR_WRITE or SQLITE_FULL);
        a pipe is no file, so log lines sent through one still get out.
        """
        soft = resource.RLIM_INFINITY if limit is None else limit
        resource.prlimit(self.pid, resource.RLIMIT_FSIZE, (soft, resource.RLIM_INFINITY))

    async def _copy_log(self, stream: asyncio.StreamReader) -> None:
        with self.log.open("ab") as log:
            while line := await stream.readline():
                log.write(line)
                log.flush()

    async def _log_copied(self) -> None:
        if self._pump is not None:
            # A render worker shares the agent's stderr; it ends when the agent does.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._pump), 10)

    async def terminate(self, timeout_s: float = 30.0) -> int:
        """SIGTERM, then the exit code."""
        assert self.process is not None
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(self.process.wait(), timeout_s)
        await self._log_copied()
        return code

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
        await self._log_copied()


class RunningAgent:
    """An agent process, its status endpoint, and what it logged."""

    def __init__(self, process: AgentProcess, status_port: int, session: aiohttp.ClientSession):
        self.process = process
        self.status_url = f"http://127.0.0.1:{status_port}"
        self.session = session

    async def healthy(self) -> bool:
        """The process runs and /healthz says every loop does."""
        if not self.alive():
            raise AssertionError(f"the agent exited:\n{self.process.tail()}")
        try:
            async with self.session.get(self.status_url + "/healthz") as response:
                return response.status == 200
        except aiohttp.ClientConnectionError:
            return False  # not serving yet

    def alive(self) -> bool:
        assert self.process.process is not None
        return self.process.process.returncode is None

    async def status(self) -> dict[str, Any]:
        async with self.session.get(self.status_url + "/status") as response:
            answer: dict[str, Any] = await response.json()
            return answer

    async def journal(self) -> dict[str, int]:
        journal: dict[str, int] = (await self.status())["journal"]
        return journal

    def logged(self, event: str, **fields: Any) -> list[dict[str, Any]]:
        return [
            line for line in self.process.events()
            if line.get("event") == event and all(line.get(k) == v for k, v in fields.items())
        ]  # fmt: skip

    async def has_logged(self, event: str, **fields: Any) -> bool:
        return bool(self.logged(event, **fields))


def agent_config_for(settings: AgentSettings, emulator: PrinterEmulator, path: Path,
                     status_port: int) -> Path:  # fmt: skip
    """The TOML an agent process runs with: `settings`' identity, test timings."""
    assert settings.token is not None
    return write_agent_toml(
        path, emulator_table(emulator),
        printer_id=settings.printer_id, coordinator_url=settings.coordinator_url,
        token=settings.token.get_secret_value(), state_dir=settings.state_dir,
        status_port=status_port, mdns=False, heartbeat_interval_s=0.1,
        probe_interval_s=0.1, lease_wait_s=2.0, retry_initial_s=0.05, retry_max_s=0.5,
    )  # fmt: skip
