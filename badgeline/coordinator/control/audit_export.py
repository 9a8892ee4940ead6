"""The audit export: every job that leaves Redis, as one JSON line on disk.

Files are `<audit_dir>/jobs-YYYY-MM-DD-NNN.jsonl` (the UTC day by this host's
clock, NNN from 001), a new one each day and whenever the next batch would take
the current one past `audit_file_max_bytes`. The directory is 0700 and its
files 0600 (badgeline/private_files.py): a record carries the attendee and the
badge reference. Each line opens with the job id (`{"job_id":"job_…",`), so a
job is found with a byte search, without parsing the file.

Replicas sharing the directory append under an exclusive lock on
`<audit_dir>/.lock`, and a batch is fsynced before `write` returns: only then
may the job leave Redis. A replica that died after writing a batch and before
removing its jobs from Redis is covered by its successor: jobs claimed again
(a later attempt) are looked for first and not written twice. A line torn by
a crash mid-write is left as it is (readers skip it) and the next batch starts
on a fresh line.

A record (format 1): `job_id`, `format`, `version` (the job's last change in ms
and its history's length), `venue`, `retired_at` (Unix s, Redis clock), `job`
(the job as `GET /v1/jobs/{job_id}` shows it, with its history), `fields` (the
rest of the job's hash: lease, fence, tallies, owner), `prints` and `grants`
(lease ids), `printed_more_than_once`.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import mmap
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from badgeline.coordinator.store.retention import ClaimedJob
from badgeline.private_files import FILE_MODE, private_dir
from badgeline.protocol.models import HistoryEntry, JobView

RECORD_FORMAT = 1
FILE_GLOB = "jobs-*.jsonl"
LOCK_FILE = ".lock"
# A job claimed again is looked for in the files written since its first claim,
# less this margin: the claim's time is the Redis clock, a file's the host's.
CLOCK_MARGIN_S = 3600.0
RETENTION_ACTOR = "coordinator:retention"


@dataclass(frozen=True)
class WriteResult:
    path: Path | None  # the file written to; None when every job was there already
    written: int
    already: int  # jobs found in the export from an earlier claimant's write


def version(job: ClaimedJob) -> str:
    """Which version of the job a record holds: its last change and history length."""
    return f"{job.fields.get('updated_ms', '')}/{len(job.history)}"


def record_line(job: ClaimedJob, venue: str, retired_ms: int) -> bytes:
    """One job's record, as its line (job id first, for `find`)."""
    record: dict[str, Any] = {
        "job_id": job.job_id,
        "format": RECORD_FORMAT,
        "version": version(job),
        "venue": venue,
        "retired_at": retired_ms / 1000,
        "job": job.view.model_dump(mode="json", by_alias=True),
        # The payload is in `job` already.
        "fields": {name: value for name, value in job.fields.items() if name != "payload"},
        "prints": job.prints,
        "grants": job.grants,
        "printed_more_than_once": len(job.prints) > 1,
    }
    return (json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n").encode()


def retired_view(record: dict[str, Any], path: Path) -> JobView:
    """The job as `GET /v1/jobs/{job_id}` shows it, with a last history line saying
    where it was read from."""
    view = JobView.model_validate(record["job"])
    note = HistoryEntry.model_validate({
        "at": record["retired_at"], "from": view.state, "to": view.state,
        "actor": RETENTION_ACTOR,
        "reason": f"left Redis after job_retention_s; read from the audit export ({path.name})",
    })  # fmt: skip
    return view.model_copy(update={"history": [*view.history, note]})


def _marker(job_id: str) -> bytes:
    return b'{"job_id":' + json.dumps(job_id).encode() + b","


def _complete_line(data: mmap.mmap, start: int, job_id: str) -> dict[str, Any] | None:
    """The record whose line starts at `start`, if that line is whole and is job_id's."""
    end = data.find(b"\n", start)
    if end < 0:
        return None  # torn: the writer died mid-line
    try:
        record: dict[str, Any] = json.loads(data[start:end])
    except ValueError:
        return None
    return record if record.get("job_id") == job_id else None


class AuditExport:
    def __init__(self, directory: Path, max_file_bytes: int) -> None:
        self.directory = Path(directory)
        self.max_file_bytes = max_file_bytes

    # ------------------------------------------------------------------ writing

    def write(
        self, lines: list[tuple[str, bytes]], look_first: dict[str, tuple[float, str]]
    ) -> WriteResult:
        """Append `lines` ((job_id, line) pairs) and fsync them. Jobs named in
        `look_first` (job_id -> (Unix s of their first claim, their version)) are
        written only if the export does not hold that version of them yet (a job
        that changed after an earlier claimant wrote it is written again, and its
        later line is its final record). Blocking: run it in a thread."""
        private_dir(self.directory)
        with self._locked():
            already = self._present(look_first) if look_first else set()
            todo = [line for job_id, line in lines if job_id not in already]
            path = self._append(b"".join(todo)) if todo else None
        return WriteResult(path, len(todo), len(already))

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        fd = os.open(self.directory / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
        try:
            os.fchmod(fd, FILE_MODE)
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the lock

    def _current(self, size: int) -> Path:
        """The file a batch of `size` bytes goes to: today's last one while it has room."""
        day = datetime.now(UTC).strftime("%Y-%m-%d")
        todays = sorted(self.directory.glob(f"jobs-{day}-*.jsonl"))
        if todays:
            last = todays[-1]
            used = last.stat().st_size
            if used == 0 or used + size <= self.max_file_bytes:
                return last
            number = int(last.stem.rsplit("-", 1)[1]) + 1
        else:
            number = 1
        return self.directory / f"jobs-{day}-{number:03d}.jsonl"

    def _append(self, data: bytes) -> Path:
        path = self._current(len(data))
        created = not path.exists()
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
        try:
            os.fchmod(fd, FILE_MODE)  # O_CREAT keeps an existing file's mode
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                data = b"\n" + data  # a line torn by a crash: start on a fresh one
            left = memoryview(data)
            while left:
                written = os.write(fd, left)
                left = left[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
        if created:  # the new name must survive a power cut too
            dir_fd = os.open(self.directory, os.O_RDONLY | os.O_CLOEXEC)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
        return path

    def _present(self, look_first: dict[str, tuple[float, str]]) -> set[str]:
        since = min(first for first, _ in look_first.values()) - CLOCK_MARGIN_S
        found: set[str] = set()
        for path in reversed(self.files()):  # newest first: a job's latest line counts
            if path.stat().st_mtime < since:
                break
            with _mapped(path) as data:
                if data is None:
                    continue
                for job_id in look_first.keys() - found:
                    record = _find_in(data, job_id)
                    if record is not None and record.get("version") == look_first[job_id][1]:
                        found.add(job_id)
        return found

    # ------------------------------------------------------------------ reading

    def files(self) -> list[Path]:
        """The export's files, oldest first."""
        try:
            return sorted(self.directory.glob(FILE_GLOB))
        except OSError:
            return []

    def find(self, job_id: str) -> tuple[dict[str, Any], Path] | None:
        """The newest whole record of `job_id` and its file. Blocking: run it in a thread."""
        for path in reversed(self.files()):
            with _mapped(path) as data:
                if data is not None and (record := _find_in(data, job_id)) is not None:
                    return record, path
        return None

    def records(self) -> Iterator[dict[str, Any]]:
        """Every whole record, oldest file first (torn lines skipped)."""
        for path in self.files():
            with path.open("rb") as file:
                for line in file:
                    if line.endswith(b"\n"):
                        with contextlib.suppress(ValueError):
                            yield json.loads(line)


def _find_in(data: mmap.mmap, job_id: str) -> dict[str, Any] | None:
    """The last whole record of `job_id` in a mapped file."""
    marker, end = _marker(job_id), len(data)
    while (at := data.rfind(marker, 0, end)) >= 0:
        if (at == 0 or data[at - 1] == ord("\n")) and (
            record := _complete_line(data, at, job_id)
        ) is not None:
            return record
        end = at
    return None


@contextlib.contextmanager
def _mapped(path: Path) -> Iterator[mmap.mmap | None]:
    """The file mapped for reading; None when it is empty or gone."""
    try:
        file = path.open("rb")
    except FileNotFoundError:
        yield None
        return
    with file:
        if os.fstat(file.fileno()).st_size == 0:
            yield None
            return
        with mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as data:
            yield data
