"""Another user on the venue server (or the Pi) gets nothing: not Redis, not the state files.

The tests run as root and act as user `nobody` with `setpriv`, as a tech's login
or a service account on the same machine would. The state lives in a folder
everyone may traverse, made under umask 022, so that only the product's own
modes stand between `nobody` and it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from badgeline.agent.journal import Journal, JournalSettings
from badgeline.coordinator.store.embedded import PASSWORD_FILE
from tests.security.conftest import running_coordinator

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="needs root and setpriv to act as another user",
)
NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]


def as_nobody(*command: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*NOBODY, *command], input=stdin, capture_output=True, timeout=20)


def nobody_can_read(path: Path) -> bool:
    return as_nobody("cat", str(path)).returncode == 0


def redis_answer_to_nobody(port: int, command: str) -> bytes:
    """What the server answers `nobody` on a plain connection (bash's /dev/tcp)."""
    script = (f"exec 3<>/dev/tcp/127.0.0.1/{port}; printf '{command}\\r\\n' >&3;"
              " timeout 2 head -n 1 <&3")  # fmt: skip
    return as_nobody("bash", "-c", script).stdout


@pytest.fixture
def shared_folder() -> Iterator[Path]:
    """A folder every user may enter, with state made in it under a lax umask."""
    folder = Path(tempfile.mkdtemp(prefix="badgeline-local-users-"))
    folder.chmod(0o755)
    old_umask = os.umask(0o022)
    try:
        yield folder
    finally:
        os.umask(old_umask)
        shutil.rmtree(folder, ignore_errors=True)


def test_another_user_can_neither_use_the_embedded_redis_nor_read_its_files(
    shared_folder: Path,
) -> None:
    # GIVEN a coordinator started as the README starts it, with its embedded Redis,
    # its state directory in a folder every user may enter, under umask 022
    state = shared_folder / "state"
    with running_coordinator(shared_folder, None, "hall") as live:
        started = next(json.loads(line[line.index("{"):]) for line in live.log().splitlines()
                       if '"embedded_redis_started"' in line)  # fmt: skip
        port, redis_dir = int(started["port"]), Path(started["dir"])
        password = (redis_dir / PASSWORD_FILE).read_text().strip()
        client = redis.Redis(port=port, password=password)
        client.hset("bl:{hall}:session:abc", mapping={"token_sha256": "f" * 64})
        client.close()
        # WHEN another local user connects to it, without the password
        # THEN every command is refused: nothing read, nothing written
        assert redis_answer_to_nobody(port, "PING").startswith(b"-NOAUTH")
        assert redis_answer_to_nobody(port, "KEYS *").startswith(b"-NOAUTH")
        hset = "HSET bl:{hall}:session:forged token_sha256 x"
        assert redis_answer_to_nobody(port, hset).startswith(b"-NOAUTH")
        # AND it cannot read the password, the server's config or the AOF, nor list them
        files = [path for path in state.rglob("*") if path.is_file()]
        assert redis_dir / PASSWORD_FILE in files and any("appendonly" in str(p) for p in files)
        assert not any(nobody_can_read(path) for path in files)
        assert as_nobody("ls", str(state)).returncode != 0
        # AND the password is on no command line (any user can read those in /proc)
        assert password.encode() not in _command_lines()
        # AND everything the coordinator and its server wrote is 0600 in 0700
        # directories, whatever the umask
        for path in [state, *state.rglob("*")]:
            mode = path.stat().st_mode & 0o777
            assert mode == (0o700 if path.is_dir() else 0o600), (path, oct(mode))


def _command_lines() -> bytes:
    lines = b""
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):
            lines += cmdline.read_bytes()
    return lines


async def test_another_user_cannot_read_the_agents_journal(shared_folder: Path) -> None:
    # GIVEN an agent's journal with a job's payload in it, in its state directory
    journal_path = shared_folder / "agent" / "journal.sqlite3"
    journal = await Journal.open(JournalSettings(path=journal_path))
    try:
        await journal.record_lease(
            "job-1",
            "lease-1",
            {"badge_pdf_ref": "file:///badges/a.pdf", "attendee_id": "att-secret"},
        )
        # THEN another user can read none of its files, nor list the folder
        files = list(journal_path.parent.iterdir())
        assert journal_path in files and len(files) >= 2  # the database, its WAL, its lock…
        assert not any(nobody_can_read(path) for path in files)
        assert as_nobody("ls", str(journal_path.parent)).returncode != 0
        for path in files:
            assert path.stat().st_mode & 0o777 == 0o600, path
        assert journal_path.parent.stat().st_mode & 0o777 == 0o700
    finally:
        await journal.close()
