"""What the end-to-end tests share: a LocalVenue whose agents take extra settings,
the agent journal read from outside, the emulators' ground truth per job, and a
relay that holds a printer's status replies.

Everything here drives real processes and real sockets; nothing is mocked.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import sqlite3
import threading
import tomllib
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from badgeline.agent.config import JOURNAL_FILE_NAME
from badgeline.localvenue import LocalVenue, PrinterSlot, wait_until
from tests.agent.relay import ReplyHoldingRelay

# Agent settings every e2e venue uses. A short lease long-poll (2 s) keeps each
# agent's wait on a lease short; dispatch is woken by pub/sub, so a short poll
# does not slow printing.
E2E_AGENT_SETTINGS: dict[str, Any] = {"lease_wait_s": 2.0}


@dataclass
class E2EVenue(LocalVenue):
    """A LocalVenue whose agent configs get `agent_settings` (all agents) and
    `agent_settings_for[printer_id]` laid over them; tables such as `printer` merge."""

    agent_settings: dict[str, Any] = field(default_factory=lambda: dict(E2E_AGENT_SETTINGS))
    agent_settings_for: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__post_init__()
        # Agents are given the coordinator's URL. Without mDNS, a coordinator of
        # another venue on this host (another test, a demo) advertising the same
        # venue name cannot make ours exit at start-up with NameConflict.
        self.extra_coordinator_config.setdefault("mdns", False)

    def write_agent_config(self, slot: PrinterSlot) -> Path:
        path = super().write_agent_config(slot)
        config = tomllib.loads(path.read_text())
        for extra in (self.agent_settings, self.agent_settings_for.get(slot.printer_id, {})):
            for key, value in extra.items():
                merge = isinstance(value, dict) and isinstance(config.get(key), dict)
                config[key] = {**config[key], **value} if merge else value
        path.write_text(self._toml(config))
        return path

    def journal_path(self, printer_id: str) -> Path:
        return self.root / "agents" / printer_id / JOURNAL_FILE_NAME

    def log_tail(self, name: str, lines: int = 30) -> str:
        """The end of a process's log, for failure messages."""
        path = self.root / "logs" / f"{name}.log"
        text = path.read_text(errors="replace") if path.exists() else "(no log)"
        return "\n".join(text.splitlines()[-lines:])


# ------------------------------------------------------------ ground truth


def prints_by_job(venue: LocalVenue) -> collections.Counter[str | None]:
    """How many times each job id came out of any emulator (None: no readable footer)."""
    return collections.Counter(row["job_id"] for row in venue.printed_rows())


def printed_on(venue: LocalVenue, printer_id: str) -> list[dict[str, Any]]:
    """The rows of one emulator, in the order the badges came out."""
    return [row for row in venue.printed_rows() if row["printer_id"] == printer_id]


def wait_until_printed(venue: LocalVenue, job_ids: Iterable[str], timeout_s: float) -> None:
    """Every job came out of some emulator at least once (ground truth, not the API)."""
    wanted = set(job_ids)

    def all_out() -> bool:
        counts = prints_by_job(venue)
        return all(counts[job_id] for job_id in wanted)

    wait_until(all_out, timeout_s, f"{len(wanted)} jobs to come out of the emulators")


def wait_until_state(
    venue: LocalVenue, job_ids: Iterable[str], state: str, timeout_s: float
) -> dict[str, dict[str, Any]]:
    """Every job reaches `state` at the coordinator; returns the last view of each."""
    pending = set(job_ids)
    views: dict[str, dict[str, Any]] = {}

    def reached() -> bool:
        for job_id in sorted(pending):
            views[job_id] = venue.job(job_id)
            if views[job_id]["state"] == state:
                pending.discard(job_id)
        return not pending

    wait_until(reached, timeout_s, f"jobs to be {state}: still {sorted(pending)[:5]}…")
    return views


def submitted_job_id(answer: dict[str, Any]) -> str:
    assert answer["state"] == "queued" and not answer["duplicate"], answer
    return str(answer["job_id"])


# ------------------------------------------------------------ the agent's journal


def journal_rows(venue: E2EVenue, printer_id: str) -> list[dict[str, Any]]:
    """Every (job, lease) row of an agent's journal, oldest first, read-only.

    SQLite in WAL mode lets this reader in beside a running (or killed) agent.
    """
    uri = f"file:{venue.journal_path(printer_id)}?mode=ro"
    with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=10)) as db:
        db.row_factory = sqlite3.Row
        rows = db.execute("SELECT * FROM jobs ORDER BY entry_id").fetchall()
    return [dict(row) for row in rows]


# ------------------------------------------------------------ a slow printer link


class ThreadedRelay:
    """`tests.agent.relay.ReplyHoldingRelay` on its own event loop thread, for
    synchronous tests: a real TCP hop between an agent process and its emulator
    whose replies (the DLE EOT status bytes) can be held back and released."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="relay", daemon=True)
        self._relay = ReplyHoldingRelay(target_host, target_port)

    @property
    def port(self) -> int:
        return self._relay.port

    def start(self) -> None:
        self._thread.start()
        self._call(self._relay.start)

    def hold_replies(self) -> None:
        self._loop.call_soon_threadsafe(self._relay.hold_replies)

    def release_replies(self) -> None:
        self._loop.call_soon_threadsafe(self._relay.release_replies)

    def stop(self) -> None:
        self._call(self._relay.stop)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def _call(self, coroutine_function: Callable[[], Any]) -> None:
        future: Future[Any] = asyncio.run_coroutine_threadsafe(coroutine_function(), self._loop)
        future.result(10)
