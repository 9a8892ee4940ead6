"""Power-cut simulation: SIGKILL a journal writer at random moments, then check the file.

After every kill the journal must pass `PRAGMA integrity_check`, open without
being moved aside, and hold every transition the writer reported as committed
(in that state or a later one). SIGKILL loses the process, not the kernel's
page cache: this proves crash consistency and that a reported commit really
was committed; surviving real power loss rests on synchronous=FULL, which
`test_storage` checks is in force.

BADGELINE_JOURNAL_POWER_CUTS sets the number of kills (default 30; the bench
runs 100 or more), BADGELINE_JOURNAL_POWER_CUT_SEED the random seed.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import sys
from dataclasses import dataclass, field
from pathlib import Path

from badgeline.agent.journal import Journal, JournalSettings, LocalJobState

from .helpers import badgeline_env

KILLS = int(os.environ.get("BADGELINE_JOURNAL_POWER_CUTS", "30"))
SEED = int(os.environ.get("BADGELINE_JOURNAL_POWER_CUT_SEED", "20240601"))
WRITER = Path(__file__).with_name("power_cut_writer.py")
FIRST_LINE_TIMEOUT_S = 30.0
EXIT_TIMEOUT_S = 30.0

# A reported state, and the states the journal may show for it afterwards.
STATES_AT_LEAST: dict[str, frozenset[str]] = {
    "leased": frozenset(LocalJobState),
    "granted": frozenset({"granted", "printed", "failed", "uncertain", "acked"}),
    "printed": frozenset({"printed", "acked"}),
    "failed": frozenset({"failed", "acked"}),
    "uncertain": frozenset({"uncertain", "acked"}),
    "dropped": frozenset({"dropped"}),
    "acked": frozenset({"acked"}),
}
RESULTS = ("printed", "failed", "uncertain")


@dataclass
class Run:
    lines: list[str] = field(default_factory=list)
    opening: asyncio.Event = field(default_factory=asyncio.Event)
    first_commit: asyncio.Event = field(default_factory=asyncio.Event)


async def collect_lines(stream: asyncio.StreamReader, run: Run) -> None:
    # Only whole lines count: a line cut off by the kill was never promised.
    while line := await stream.readline():
        if not line.endswith(b"\n"):
            continue
        text = line.decode().rstrip("\n")
        if text == "OPENING":
            run.opening.set()
            continue
        run.lines.append(text)
        run.first_commit.set()


async def kill_writer_once(path: Path, run_number: int, delay_s: float, early: bool) -> list[str]:
    """Start a writer and SIGKILL it `delay_s` after it starts opening the journal
    (early) or after its first commit."""
    stderr_path = path.with_name(f"writer-{run_number}.stderr")
    with stderr_path.open("wb") as stderr:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            str(WRITER),
            str(path),
            str(run_number),
            str(SEED + run_number),
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
            env=badgeline_env(),
        )
        assert process.stdout is not None
        run = Run()
        reader = asyncio.create_task(collect_lines(process.stdout, run))
        started = run.opening if early else run.first_commit
        await asyncio.wait_for(started.wait(), FIRST_LINE_TIMEOUT_S)
        await asyncio.sleep(delay_s)
        still_running = process.returncode is None
        process.send_signal(signal.SIGKILL)
        await asyncio.wait_for(process.wait(), EXIT_TIMEOUT_S)
        await asyncio.wait_for(reader, EXIT_TIMEOUT_S)
    assert still_running, f"writer exited on its own: {stderr_path.read_text()}"
    assert process.returncode == -signal.SIGKILL
    return run.lines


def assert_integrity(path: Path) -> None:
    # A plain connection, before Journal.open: its own check-and-move-aside
    # must not get the chance to hide a damaged file.
    raw = sqlite3.connect(path)
    try:
        assert raw.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        raw.close()


async def assert_promises_kept(path: Path, promised: dict[tuple[str, str], str]) -> None:
    journal = await Journal.open(JournalSettings(path=path))
    try:
        assert journal.moved_aside is None
        for (job_id, lease_id), reported in promised.items():
            entry = await journal.get(job_id, lease_id)
            assert entry is not None, f"{job_id} {lease_id} reported {reported}, now missing"
            assert entry.state in STATES_AT_LEAST[reported], (job_id, lease_id, reported, entry)
            if reported in RESULTS:
                assert entry.outcome == reported, (job_id, lease_id, reported, entry)
        await assert_outbox_matches_rows(journal)
    finally:
        await journal.close()


async def assert_outbox_matches_rows(journal: Journal) -> None:
    """Every owed result has exactly one outbox entry, and nothing else has one."""
    pending = await journal.pending_acks()
    counts = await journal.counts()
    assert len(pending) == sum(counts[state] for state in RESULTS)
    for ack in pending:
        entry = await journal.get(ack.job_id, ack.lease_id)
        assert entry is not None and entry.state == ack.result


async def test_journal_survives_random_kills(tmp_path: Path) -> None:
    import random

    # GIVEN one journal file that a writer process keeps coming back to
    path = tmp_path / "journal.db"
    rng = random.Random(SEED)
    promised: dict[tuple[str, str], str] = {}
    total_lines = 0

    for run_number in range(KILLS):
        # WHEN the writer is killed at a random moment: mostly mid-stream,
        # sometimes early (during open, migrations, recovery or resent acks)
        early = rng.random() < 0.25
        delay_s = rng.uniform(0.0, 0.03) if early else rng.uniform(0.0, 0.15)
        lines = await kill_writer_once(path, run_number, delay_s, early)
        assert not [line for line in lines if line.startswith("MOVED-ASIDE")]
        for line in lines:
            job_id, lease_id, state = line.split()
            promised[(job_id, lease_id)] = state
        total_lines += len(lines)
        if not path.exists():
            continue  # killed before SQLite created the file: nothing was promised

        # THEN the file is intact and every reported commit is there
        assert_integrity(path)
        await assert_promises_kept(path, promised)

    # AND the run really exercised the journal
    assert total_lines > KILLS
    assert not [entry.name for entry in tmp_path.iterdir() if "corrupt" in entry.name]
