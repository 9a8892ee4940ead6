"""The file underneath: durability pragmas, migrations, corrupt files, locks, full disks."""

from __future__ import annotations

import logging
import random
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from badgeline.agent.journal import (
    Journal,
    JournalBusyError,
    JournalInUseError,
    JournalSchemaError,
    JournalSettings,
    JournalWriteError,
    LocalJobState,
)
from badgeline.protocol.states import AckResult

from .conftest import OpenJournal
from .helpers import PAYLOAD, badgeline_env, job_in_state, tear_index_page


def files_beside(path: Path) -> list[str]:
    """The journal's files, without its ownership lock (ownership.py, always there)."""
    lock = path.name + ".lock"
    return sorted(entry.name for entry in path.parent.iterdir() if entry.name != lock)


async def test_the_live_connection_is_wal_with_full_sync(open_journal: OpenJournal) -> None:
    # GIVEN a journal opened with a 2.5 s busy timeout
    journal = await open_journal(busy_timeout_ms=2500)

    # WHEN the pragmas are read on its own connection
    settings = await journal.connection_settings()

    # THEN commits go through a WAL and are fsynced (FULL = 2)
    assert settings["journal_mode"] == "wal"
    assert settings["synchronous"] == 2
    assert settings["busy_timeout"] == 2500


async def test_migrations_are_recorded_once(open_journal: OpenJournal, journal_path: Path) -> None:
    # GIVEN a journal created, closed and opened again
    first = await open_journal()
    await first.close()
    second = await open_journal()
    await second.close()

    # WHEN the schema_version table is read
    with sqlite3.connect(journal_path) as raw:
        rows = raw.execute("SELECT version, name FROM schema_version").fetchall()
    raw.close()

    # THEN each migration was applied exactly once, in order
    assert rows == [(1, "initial"), (2, "failure_reason")]
    assert second.schema_version == 2


async def test_a_journal_from_a_newer_agent_is_refused_not_replaced(
    open_journal: OpenJournal, journal_path: Path
) -> None:
    # GIVEN a journal whose schema is newer than this build knows
    journal = await open_journal()
    await job_in_state(journal, "printed")
    await journal.close()
    with sqlite3.connect(journal_path) as raw:
        raw.execute("INSERT INTO schema_version VALUES (99, 'future', 0)")
    raw.close()

    # WHEN this build opens it
    with pytest.raises(JournalSchemaError):
        await open_journal()

    # THEN the file is left where it is: it is readable, just not by this build
    assert files_beside(journal_path) == ["journal.db"]


async def test_a_file_that_is_not_a_database_is_moved_aside(
    open_journal: OpenJournal, journal_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN a journal path holding garbage, and a stale WAL beside it
    journal_path.parent.mkdir(parents=True)
    journal_path.write_bytes(b"\x00garbage after a power cut\xff" * 300)
    (journal_path.parent / "journal.db-wal").write_bytes(b"stale wal")

    # WHEN the agent opens its journal
    with caplog.at_level(logging.ERROR, logger="badgeline.agent.journal"):
        journal = await open_journal()

    # THEN the bad files are kept aside under a timestamped name, the error is logged
    moved = journal.moved_aside
    assert moved is not None and moved.name.startswith("journal.db.corrupt-")
    assert moved.read_bytes().startswith(b"\x00garbage")
    # (SQLite itself discards a WAL it cannot parse; what matters is that the
    # fresh journal never replays it)
    live_wal = journal_path.with_name("journal.db-wal")
    assert not live_wal.exists() or live_wal.read_bytes() != b"stale wal"
    assert any("unreadable" in record.getMessage() for record in caplog.records)
    # AND a fresh, working journal takes the original name
    entry = await journal.record_lease("job-1", "lease-1", PAYLOAD)
    assert entry.state is LocalJobState.LEASED
    assert (await journal.connection_settings())["journal_mode"] == "wal"


async def test_a_journal_with_torn_pages_is_moved_aside(
    open_journal: OpenJournal, journal_path: Path
) -> None:
    # GIVEN a journal with many rows whose middle pages were overwritten
    journal = await open_journal()
    big = {**PAYLOAD, "padding": "x" * 3000}
    for n in range(40):
        await journal.record_lease(f"job-{n}", "lease-1", big)
    await journal.close()
    with journal_path.open("r+b") as file:
        file.seek(4096 * 3)
        file.write(random.Random(4).randbytes(4096 * 4))

    # WHEN the agent opens it
    reopened = await open_journal()

    # THEN it is moved aside and the agent starts on an empty journal
    assert reopened.moved_aside is not None
    assert await reopened.get("job-1") is None
    assert (await reopened.counts())["leased"] == 0


async def test_a_rebuilt_journal_keeps_what_the_coordinator_is_still_owed(
    open_journal: OpenJournal, journal_path: Path
) -> None:
    # GIVEN a journal holding a grant without a result, an unacked print, a lease
    # and a confirmed print, whose index page a power cut then tore
    journal = await open_journal()
    await job_in_state(journal, "granted", job_id="job-granted")
    await job_in_state(journal, "printed", job_id="job-printed")
    await job_in_state(journal, "leased", job_id="job-leased")
    await job_in_state(journal, "acked-printed", job_id="job-acked")
    await journal.close()
    tear_index_page(journal_path, "jobs_by_state")

    # WHEN the agent opens it: it is moved aside and rebuilt
    reopened = await open_journal()
    assert reopened.moved_aside is not None

    # THEN what the coordinator must still hear is carried over and queued for it:
    # the print as printed, the grant as uncertain (it may have printed)
    pending = {ack.job_id: ack.result for ack in await reopened.pending_acks()}
    assert pending == {"job-printed": AckResult.PRINTED, "job-granted": AckResult.UNCERTAIN}
    # AND the lease never granted and the confirmed print are not
    assert await reopened.get("job-leased") is None and await reopened.get("job-acked") is None


async def test_a_journal_named_by_a_relative_path_is_rebuilt_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the default state_dir, which is relative, and a torn journal in it
    monkeypatch.chdir(tmp_path)
    settings = JournalSettings(path=Path("var/agent/journal.db"))
    journal = await Journal.open(settings)
    await job_in_state(journal, "printed")
    await journal.close()
    tear_index_page(settings.path, "jobs_by_state")
    # WHEN the agent opens it
    async with await Journal.open(settings) as reopened:
        # THEN it is rebuilt with the owed result, not refused
        assert reopened.moved_aside is not None
        assert [ack.job_id for ack in await reopened.pending_acks()] == ["job-1"]


async def test_a_healthy_journal_is_never_moved(
    open_journal: OpenJournal, journal_path: Path
) -> None:
    # GIVEN a journal closed with work still owed
    journal = await open_journal()
    await job_in_state(journal, "printed")
    await journal.close()

    # WHEN it is opened again
    reopened = await open_journal()

    # THEN nothing is moved and the owed ack is still there
    assert reopened.moved_aside is None
    assert len(await reopened.pending_acks()) == 1
    assert not [name for name in files_beside(journal_path) if "corrupt" in name]


async def test_a_locked_journal_is_a_busy_error_not_corruption(
    open_journal: OpenJournal, journal_path: Path
) -> None:
    # GIVEN a journal with an owed ack, held write-locked by another process
    journal = await open_journal()
    await job_in_state(journal, "printed")
    await journal.close()
    holder = sqlite3.connect(journal_path, isolation_level=None)
    try:
        holder.execute("PRAGMA locking_mode = EXCLUSIVE")
        holder.execute("BEGIN IMMEDIATE")
        holder.execute("UPDATE jobs SET error = error")

        # WHEN the agent tries to open it with a short busy timeout
        with pytest.raises(JournalBusyError):
            await open_journal(busy_timeout_ms=50)
    finally:
        holder.rollback()
        holder.close()

    # THEN the file was left alone, and opens intact once the lock is gone
    assert not [name for name in files_beside(journal_path) if "corrupt" in name]
    reopened = await open_journal()
    assert reopened.moved_aside is None
    assert len(await reopened.pending_acks()) == 1


async def test_a_full_journal_raises_a_write_error_and_keeps_what_it_had(
    open_journal: OpenJournal,
) -> None:
    # GIVEN a journal capped at 64 KiB with one printed job owing its ack
    journal = await open_journal(max_size_bytes=64 * 1024)
    await job_in_state(journal, "printed")
    big = {**PAYLOAD, "padding": "x" * 4000}

    # WHEN leases are journaled until the cap is hit
    with pytest.raises(JournalWriteError):
        for n in range(100):
            await journal.record_lease(f"job-big-{n}", "lease-1", big)

    # THEN the error is typed, the failed lease left no row, and the journal still works
    assert await journal.get(f"job-big-{n}") is None
    assert [ack.job_id for ack in await journal.pending_acks()] == ["job-1"]
    assert (await journal.mark_acked("job-1", "lease-1")).state is LocalJobState.ACKED


FILE_SIZE_LIMIT_SCRIPT = textwrap.dedent(
    """
    import asyncio, resource, sys
    from pathlib import Path
    from badgeline.agent.journal import Journal, JournalSettings, JournalWriteError

    async def main() -> None:
        journal = await Journal.open(JournalSettings(path=Path(sys.argv[1])))
        await journal.record_lease("job-0", "lease-1", {"n": 0})
        # The kernel refuses to grow any file past 256 KiB from here on: what a
        # full SD card looks like to SQLite (CPython ignores SIGXFSZ).
        resource.setrlimit(resource.RLIMIT_FSIZE, (256 * 1024, resource.RLIM_INFINITY))
        try:
            for n in range(1, 1000):
                await journal.record_lease(f"job-{n}", "lease-1", {"padding": "x" * 8000})
        except JournalWriteError as error:
            print("JournalWriteError", error, flush=True)
        finally:
            resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY,) * 2)
            await journal.close()

    asyncio.run(main())
    """
)


def test_an_os_write_failure_is_a_journal_write_error(tmp_path: Path) -> None:
    # GIVEN an agent process whose files may not grow past 256 KiB
    # WHEN it journals leases until the write fails
    result = subprocess.run(
        [sys.executable, "-c", FILE_SIZE_LIMIT_SCRIPT, str(tmp_path / "journal.db")],
        capture_output=True,
        text=True,
        timeout=60,
        env=badgeline_env(),
        check=False,
    )

    # THEN the failure reaches the agent as a JournalWriteError
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("JournalWriteError"), result.stdout + result.stderr


HOLD_JOURNAL_SCRIPT = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from badgeline.agent.journal import Journal, JournalSettings

    async def main() -> None:
        journal = await Journal.open(JournalSettings(path=Path(sys.argv[1])))
        await journal.record_lease("job-theirs", "lease-1", {"n": 1})
        print("open", flush=True)
        await asyncio.sleep(120)  # held until the test kills this process

    asyncio.run(main())
    """
)


async def test_a_journal_another_agent_process_holds_is_refused_until_that_process_dies(
    tmp_path: Path,
) -> None:
    # GIVEN an agent process with its journal open (the service), and its lease in it
    path = tmp_path / "agent" / "journal.db"
    holder = subprocess.Popen([sys.executable, "-c", HOLD_JOURNAL_SCRIPT, str(path)],
                              stdout=subprocess.PIPE, text=True, env=badgeline_env())  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "open\n"
        # WHEN a second agent (the same command typed by hand) opens that journal
        # THEN it is refused before its recovery can touch the first one's work
        refusal = f"in use by another agent process \\(pid {holder.pid}\\)"
        with pytest.raises(JournalInUseError, match=refusal):
            second = await Journal.open(JournalSettings(path=path))
            await second.close()  # reached only if it was let in
    finally:
        holder.kill()  # as a power cut or kill -9 would
        holder.communicate()
    # AND once that process is gone, however it died, the journal opens as it was
    async with await Journal.open(JournalSettings(path=path)) as journal:
        entry = await journal.get("job-theirs")
        assert entry is not None and entry.state is LocalJobState.LEASED
