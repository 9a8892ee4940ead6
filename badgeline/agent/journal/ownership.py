"""One journal, one agent process.

Two agents started on one journal (the service, and the same command typed by
hand on the Pi) would each run start-up recovery over the other's work: the
second calls the first's print in progress `uncertain`, and the coordinator
prints that badge again. So opening a journal takes an exclusive lock on a file
beside it, held until the journal is closed. The kernel drops the lock when the
process dies, however it dies: a kill -9 or a power cut leaves no stale lock.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from badgeline.agent.journal.errors import JournalInUseError
from badgeline.private_files import private_dir


class JournalOwnership:
    """The lock on `<journal>.lock`; `release()` when the journal is closed."""

    def __init__(self, journal_path: Path) -> None:
        self.path = journal_path.with_name(journal_path.name + ".lock")
        # The journal's folder (the agent's state_dir) holds job payloads: its own (0700).
        private_dir(self.path.parent)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            raise JournalInUseError(
                f"journal {journal_path} is in use by another agent process (pid {holder}): "
                "stop that one first (systemctl stop badgeline-agent), or give this one "
                "its own state_dir"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd: int | None = fd

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # closing the descriptor drops the lock
