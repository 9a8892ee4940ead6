"""The README's first command as a person runs it: `badgeline demo`, looked at and
stopped with Ctrl-C, then `badgeline demo --once`.

The demo keeps its venue (Redis included) in its working directory between
runs, as a real venue keeps its state; a second run must print its own badges,
not trip over the first run's scans.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tests.helpers import taken_port

DEMO_TIMEOUT_S = 120
EMULATOR_LINE = re.compile(r"(printer-\w+):\s+emulator control (http://\S+)/printed")


def run_demo(out: Path, badges: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "badgeline.cli", "demo", "--once", "--badges", str(badges),
         "--out", str(out), "--timeout", "60"],
        capture_output=True, text=True, timeout=DEMO_TIMEOUT_S,
    )  # fmt: skip


def printed_at(emulator_urls: list[str]) -> int:
    count = 0
    for url in emulator_urls:
        with urllib.request.urlopen(url + "/printed", timeout=5) as response:
            count += len(json.loads(response.read()))
    return count


def wait_until(condition: object, what: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_the_demo_stops_on_ctrl_c_and_prints_again_when_run_a_second_time(
    tmp_path: Path,
) -> None:
    out = tmp_path / "demo-out"
    # GIVEN `badgeline demo` running in a terminal (its own process group)
    demo = subprocess.Popen(
        [sys.executable, "-m", "badgeline.cli", "demo", "--badges", "4", "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        assert demo.stdout is not None
        lines: list[str] = []
        for line in demo.stdout:
            lines.append(line)
            if "running; Ctrl-C to stop" in line:
                break
        emulators = [m.group(2) for m in map(EMULATOR_LINE.search, lines) if m]
        assert len(emulators) == 3, "".join(lines)
        wait_until(lambda: printed_at(emulators) == 4, "the 4 badges at the emulators")

        # WHEN Ctrl-C goes to the terminal's foreground group
        os.killpg(demo.pid, signal.SIGINT)
        rest, _ = demo.communicate(timeout=60)
    finally:
        if demo.poll() is None:
            os.killpg(demo.pid, signal.SIGKILL)
            demo.wait()

    # THEN it stops cleanly, and nothing of its venue is left running
    assert demo.returncode == 0, "".join(lines) + rest
    assert "SIGINT: stopping the venue" in rest
    leftovers = subprocess.run(["pgrep", "-f", str(out)], capture_output=True, text=True)
    assert leftovers.stdout == "", leftovers.stdout

    # AND a second run, --once, prints its own badges on the venue the first one left
    finished = run_demo(out, badges=4)
    assert finished.returncode == 0, f"{finished.stdout}\n{finished.stderr}"
    assert "all 4 badges printed" in finished.stdout, finished.stdout
    assert "printed_once: 4" in finished.stdout and "not_printed: 0" in finished.stdout


def test_a_demo_that_cannot_start_says_why_in_a_line_and_leaves_nothing_running(
    tmp_path: Path,
) -> None:
    # GIVEN the port the demo is told to use is taken
    with taken_port() as port:
        out = tmp_path / "demo-out"
        # WHEN the demo starts on it
        finished = subprocess.run(
            [sys.executable, "-m", "badgeline.cli", "demo", "--once", "--port", str(port),
             "--out", str(out)],
            capture_output=True, text=True, timeout=DEMO_TIMEOUT_S,
        )  # fmt: skip
    # THEN it exits 1 with the coordinator's own reason, not a traceback
    assert finished.returncode == 1, finished.stdout + finished.stderr
    assert finished.stderr.startswith("badgeline demo: coordinator exited while starting")
    assert f"cannot listen on 127.0.0.1:{port}" in finished.stderr
    assert "Traceback" not in finished.stderr
    leftovers = subprocess.run(["pgrep", "-f", str(out)], capture_output=True, text=True)
    assert leftovers.stdout == "", leftovers.stdout
