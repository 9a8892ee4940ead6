"""`badgeline demo --once`, the README's first command, as a person runs it: twice.

The demo keeps its venue (Redis included) in its working directory between
runs, as a real venue keeps its state; a second run must print its own badges,
not trip over the first run's scans.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

DEMO_TIMEOUT_S = 120


def run_demo(out: Path, badges: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "badgeline.cli", "demo", "--once", "--badges", str(badges),
         "--out", str(out), "--timeout", "60"],
        capture_output=True, text=True, timeout=DEMO_TIMEOUT_S,
    )  # fmt: skip


def test_the_demo_prints_every_badge_once_and_again_when_run_a_second_time(
    tmp_path: Path,
) -> None:
    out = tmp_path / "demo-out"
    for run in (1, 2):
        finished = run_demo(out, badges=4)
        assert finished.returncode == 0, f"run {run}:\n{finished.stdout}\n{finished.stderr}"
        assert "all 4 badges printed" in finished.stdout, finished.stdout
        assert "printed_once: 4" in finished.stdout and "not_printed: 0" in finished.stdout
