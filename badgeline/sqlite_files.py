"""An SQLite database file and its side files, moved aside as one.

The agent's journal and the kiosk's outbox both keep what they were trusted with in
SQLite; when one is too damaged to open, it is renamed out of the way, never deleted,
so that what it held can still be read by hand.
"""

from __future__ import annotations

import time
from pathlib import Path

from badgeline.private_files import fsync_directory

# What SQLite keeps beside a database: the write-ahead log, its index, a rollback journal.
SIDE_FILE_SUFFIXES = ("-wal", "-shm", "-journal")


def move_aside(path: Path, now: float) -> Path:
    """Rename the database and its side files to `<name>.corrupt-<UTC time>`; fsync the folder."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    counter = 1
    while target.exists():
        counter += 1
        target = path.with_name(f"{path.name}.corrupt-{stamp}-{counter}")
    if path.exists():
        path.rename(target)
    for suffix in SIDE_FILE_SUFFIXES:
        side = path.with_name(path.name + suffix)
        if side.exists():
            side.rename(target.with_name(target.name + suffix))
    # without this a power cut could bring the damaged file back under its name
    fsync_directory(path.parent)
    return target
