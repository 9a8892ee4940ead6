"""Files only their owner may read: state directories 0700, state files 0600, whatever the umask.

A venue server and a Pi have other local users (a tech's login, a service
account). What the coordinator and the agents keep (Redis's AOF and password,
job payloads in the journal, the agent token) is theirs alone: `mkdir` and
`open` take the process's umask into account, which a shell or a unit may set
to 022, so the modes are set explicitly, and a file is created with its mode
from its first byte, never readable by others for the moment before a chmod.
"""

from __future__ import annotations

import os
from pathlib import Path

DIRECTORY_MODE = 0o700
FILE_MODE = 0o600


def private_dir(path: Path) -> Path:
    """`path`, created if need be (with its parents), made 0700."""
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(DIRECTORY_MODE)
    return path


def write_private_file(path: Path, text: str) -> None:
    """Write `path` (0600 from its creation; an existing file is made 0600 first)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, FILE_MODE)
    os.fchmod(fd, FILE_MODE)  # O_CREAT leaves an existing file's mode as it was
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        file.write(text)


def make_private(*paths: Path) -> None:
    """Make each of `paths` that exists 0600 (a file an older build left readable)."""
    for path in paths:
        try:
            path.chmod(FILE_MODE)
        except FileNotFoundError:
            continue


def create_private_file(path: Path) -> None:
    """Create `path` empty and 0600 if it does not exist, so that a library opening it
    later (SQLite) finds it private, and makes its companions (WAL, SHM) private too."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
    os.close(fd)


def fsync_directory(directory: Path) -> None:
    """Make the names in `directory` durable: a rename or a new file is on disk once its
    folder is (a power cut can otherwise undo it)."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
