"""A kiosk as its own process, scanning badges on command, for the process-level tests.

    python -m tests.kiosk.scanning_kiosk OUTBOX TOKEN URL [URL…]

Commands on stdin, one a line, run in turn:

- `scan FIRST COUNT SPREAD_S TARGET[,TARGET…]`: attendees A-KP-<FIRST>… each with a
  badge of its own, spread evenly over SPREAD_S seconds, naming the targets in turn;
  prints `{"submitting": n}` before each submit and `{"kept": n, "key": …}` once it
  returned (the scan is in the outbox);
- `flush TIMEOUT_S`: prints `{"flushed": true|false}` once every scan was delivered.

At the end of stdin it closes the Kiosk and exits. `KioskProcess` drives one.
"""

from __future__ import annotations

import contextlib
import json
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

SHORT_BACKOFF = {"retry_base_s": 0.05, "retry_max_s": 1.0, "poll_interval_s": 0.5}


def attendee(n: int) -> str:
    return f"A-KP-{n:05d}"


def say(**fields: object) -> None:
    print(json.dumps(fields), flush=True)


def run(outbox: Path, token: str, urls: list[str]) -> None:
    from badgeline.kiosk import Kiosk
    from badgeline.log import configure_logging
    from badgeline.samples import sample_badge_pdf

    configure_logging("INFO")  # JSON lines on stderr: the test's kiosk log

    with Kiosk(coordinator_urls=urls, token=token, outbox_path=outbox, **SHORT_BACKOFF) as kiosk:
        say(started=True, undelivered=kiosk.undelivered)
        for line in sys.stdin:
            command, *args = line.split()
            if command == "scan":
                first, count, spread_s, targets = (int(args[0]), int(args[1]), float(args[2]),
                                                   args[3].split(","))  # fmt: skip
                started = time.monotonic()
                for i, n in enumerate(range(first, first + count)):
                    time.sleep(max(0.0, started + i * spread_s / count - time.monotonic()))
                    pdf = sample_badge_pdf(attendee(n), f"Kim Process {n}", "Kill Nine Ltd")
                    say(submitting=n)
                    ticket = kiosk.submit(attendee(n), pdf, targets[n % len(targets)])
                    say(kept=n, key=ticket.idempotency_key)
            elif command == "flush":
                say(flushed=kiosk.flush(float(args[0])))


class KioskProcess:
    """One life of a scanning kiosk: its commands, what it said, and its end."""

    def __init__(self, outbox: Path, token: str, urls: list[str], log_path: Path) -> None:
        self.log = log_path.open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.kiosk.scanning_kiosk", str(outbox), token, *urls],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True,
        )  # fmt: skip
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()
        self.said: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(json.loads(line))

    def send(self, command: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()

    def next(self, key: str, timeout_s: float = 60) -> dict[str, Any]:
        """The next line carrying `key` (the lines before it are kept in `said`)."""
        deadline = time.monotonic() + timeout_s
        while True:
            line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            self.said.append(line)
            if key in line:
                return line

    def drain(self) -> list[dict[str, Any]]:
        """Every line said so far."""
        while not self.lines.empty():
            self.said.append(self.lines.get_nowait())
        return self.said

    def kept(self) -> dict[int, str]:
        return {line["kept"]: line["key"] for line in self.drain() if "kept" in line}

    def submitting(self) -> list[int]:
        return [line["submitting"] for line in self.drain() if "submitting" in line]

    def kill(self) -> None:
        """SIGKILL, as a power cut: no close, no flush; what it said is read to the end."""
        self.process.kill()
        self.process.wait(10)
        self._reader.join(10)
        self._close_pipes()

    def finish(self, timeout_s: float = 30) -> int:
        assert self.process.stdin is not None
        self.process.stdin.close()
        code = self.process.wait(timeout_s)
        self._reader.join(10)
        self._close_pipes()
        return code

    def _close_pipes(self) -> None:
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        self.log.close()


if __name__ == "__main__":
    run(Path(sys.argv[1]), sys.argv[2], sys.argv[3:])
