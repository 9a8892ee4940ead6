"""Child processes a local venue runs (the coordinator, emulators, agents), each
logging to its own file, stopped with SIGTERM and, past a timeout, SIGKILL."""

from __future__ import annotations

import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass
class ManagedProcess:
    name: str
    command: list[str]
    log_path: Path
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            self.command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        log.close()

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout_s: float = 10.0) -> None:
        if not self.running:
            return
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def kill(self) -> None:
        if self.running:
            assert self.process is not None
            self.process.kill()
            self.process.wait()


def stop_together(processes: list[ManagedProcess], timeout_s: float = 10.0) -> None:
    """SIGTERM to every process first, then wait for each (SIGKILL after `timeout_s`):
    their shutdowns overlap instead of adding up."""
    running = [managed for managed in processes if managed.running]
    for managed in running:
        assert managed.process is not None
        managed.process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    for managed in running:
        assert managed.process is not None
        try:
            managed.process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            managed.process.kill()
            managed.process.wait()
