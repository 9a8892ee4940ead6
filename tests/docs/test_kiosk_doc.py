"""docs/kiosk.md, run: its complete example, as an integrator would copy it, against a
real coordinator (on a real port, Redis behind it) and a printer of pool hall-a played
over the agent API; what it prints is what the page says it prints, and the
coordinator holds the badge and its reprint, each printed once."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from badgeline.coordinator.config import CoordinatorSettings
from badgeline.coordinator.store.embedded import EmbeddedRedis
from badgeline.samples import sample_badge_pdf
from tests.conftest import KIOSK_TOKEN, agent_token
from tests.docs.shell_blocks import shell_blocks
from tests.kiosk.conftest import HEALTHY, ThreadedCoordinator, call, jobs_of

DOC = Path(__file__).resolve().parents[2] / "docs" / "kiosk.md"
KEY = re.compile(r"desk-hall-a-[0-9a-f]{32}")
IDS = re.compile(r"desk-hall-a-[0-9a-f]{32}|job_[0-9a-f]{16}")
# A reprint's first line is the state its answer gave, which a quick printer may have
# moved past (queued, even leased) before the answer came back.
PASSING = re.compile(r": (queued|leased|printing) \(")


class PoolPrinter:
    """printer-a in pool hall-a: heartbeats, and prints whatever it is given, until stopped."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _agent(self, path: str, body: object = None) -> object:
        status, answer = call(self.url, "POST", f"/v1/agents/printer-a{path}",
                              agent_token("printer-a"), body)  # fmt: skip
        assert status == 200, (path, answer)
        return answer

    def _run(self) -> None:
        while not self.stopping.is_set():
            self._agent("/heartbeat", {"agent_id": "pi-a", "version": "test", "health": HEALTHY,
                                       "labels": ["hall-a"]})  # fmt: skip
            leased = self._agent("/lease?wait=0.5&max=1")
            for job in leased["jobs"]:  # type: ignore[index]
                lease = {"lease_id": job["lease_id"]}
                self._agent(f"/jobs/{job['job_id']}/start", lease)
                self._agent(f"/jobs/{job['job_id']}/ack", {**lease, "result": "printed"})


@pytest.fixture
def venue(settings: CoordinatorSettings, redis_server: EmbeddedRedis) -> Iterator[str]:
    """The coordinator's URL, with printer-a of pool hall-a printing what it gets."""
    coordinator = ThreadedCoordinator(settings, redis_server.url).start()
    printer = PoolPrinter(coordinator.url)
    printer.thread.start()
    yield coordinator.url
    printer.stopping.set()
    printer.thread.join(10)
    coordinator.close()


def test_the_complete_example_runs_as_written(venue: str, tmp_path: Path) -> None:
    # GIVEN the page's blocks: every sh block is marked, one Python block is the example
    blocks = shell_blocks(DOC.read_text())
    [example] = [block for block in blocks if block.machine == "kiosk"]
    [output] = [block for block in blocks if block.machine == "output"]
    (tmp_path / "badge.pdf").write_bytes(sample_badge_pdf("att_44817", "Ada Example", "Desk Ltd"))
    env = {**os.environ, "BADGELINE_URLS": venue, "BADGELINE_KIOSK_TOKEN": KIOSK_TOKEN,
           "BADGELINE_OUTBOX": str(tmp_path / "desk" / "outbox.sqlite3"),
           "BADGE_PDF": str(tmp_path / "badge.pdf")}  # fmt: skip
    # WHEN it runs
    run = subprocess.run([sys.executable, "-c", example.code], env=env, capture_output=True,
                         text=True, timeout=120, cwd=tmp_path)  # fmt: skip
    assert run.returncode == 0, run.stderr
    # THEN it prints what the page shows: every state of the badge's job, in order (the
    # job event stream tells each), then the lines that do not depend on how fast the
    # printer is (the key and job ids are the run's own)
    lines = [IDS.sub("<id>", line) for line in run.stdout.splitlines()]
    shown = [IDS.sub("<id>", line) for line in output.code.splitlines()]
    assert lines[:4] == shown[:4], run.stdout
    assert shown[0] == "att_44817: queued (printer-a)"
    assert {line for line in shown if not PASSING.search(line)} <= set(lines), run.stdout
    # AND the coordinator holds the badge under the desk's key, and its reprint, both printed
    jobs = jobs_of(venue, "att_44817")
    original, reprint = sorted(jobs, key=lambda job: job["created_at"])
    assert KEY.fullmatch(original["idempotency_key"]) and original["prints"] == 1
    assert reprint["reprint_of"] == original["job_id"] and reprint["prints"] == 1
    assert "coffee on the badge" in reprint["history"][0]["reason"]
