"""A kiosk whose disk is full refuses the scan loudly (the integrator gets the error
and knows the scan was not kept) and loses nothing it had acknowledged: once a kiosk
reaches the coordinator, every scan it acknowledged becomes one job, and only those.

The kiosk runs in its own process (tests/kiosk/full_disk_kiosk.py), whose files the
kernel stops growing (RLIMIT_FSIZE) between two scans.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

from tests.kiosk.conftest import MakeKiosk, ThreadedCoordinator, closed_port, jobs_of


def test_a_full_disk_refuses_the_scan_loudly_and_keeps_every_scan_acknowledged_before(
    coordinator: ThreadedCoordinator, make_kiosk: MakeKiosk, badge: bytes, tmp_path: Path
) -> None:
    outbox = tmp_path / "kiosk" / "outbox.sqlite3"
    badge_file = tmp_path / "badge.pdf"
    badge_file.write_bytes(badge)
    # GIVEN a kiosk process that keeps scans while no coordinator answers, and whose
    # disk fills up after three of them
    with closed_port() as nobody_answers:
        run = subprocess.run(
            [sys.executable, "-m", "tests.kiosk.full_disk_kiosk", str(outbox),
             f"http://127.0.0.1:{nobody_answers}", str(badge_file)],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert run.returncode == 0, run.stderr
    steps = [json.loads(line) for line in run.stdout.splitlines()]
    # THEN the scan that came while the disk was full was refused, saying so
    [refused] = [step for step in steps if "refused" in step]
    assert refused["refused"] == "att_full_large"
    assert refused["error"].startswith("the scan of att_full_large was NOT kept")
    assert "disk full" in refused["error"] and "submit it again" in refused["error"]
    # AND the kiosk kept scans again once there was room, and closed cleanly
    kept = {step["kept"]: step["key"] for step in steps if "kept" in step}
    assert sorted(kept) == ["att_full_0", "att_full_1", "att_full_2", "att_full_after"]
    assert steps[-1] == {"closed": True}
    with contextlib.closing(sqlite3.connect(outbox)) as db:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    # WHEN a kiosk on that outbox reaches the coordinator
    kiosk = make_kiosk(coordinator.url, outbox_path=outbox)
    assert kiosk.flush(15)
    # THEN every acknowledged scan is one job under its key, and the refused one is none
    for attendee, key in kept.items():
        [job] = jobs_of(coordinator, attendee)
        assert job["idempotency_key"] == key
    assert jobs_of(coordinator, "att_full_large") == []
