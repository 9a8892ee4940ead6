"""The README's first command as a person runs it: `badgeline demo`, looked at and
stopped with Ctrl-C, then `badgeline demo --once`.

The demo keeps its venue (Redis included) in its working directory between
runs, as a real venue keeps its state; a second run must print its own badges,
not trip over the first run's scans, and a printer paused in an earlier run is
named, with the command that lets its badges print.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
import tomllib
import urllib.request
from pathlib import Path

import pytest

from badgeline.localvenue import LocalVenue, http_json
from tests.helpers import taken_port

DEMO_TIMEOUT_S = 120
EMULATOR_LINE = re.compile(r"^\s+(printer-\w+)\s+(http://\S+)/printed\s+(http://\S+)/status")
TOKEN_LINE = re.compile(r"^\s+(operator|kiosk|printer-\w+)\s+(\S{32})\s+(.+)$")
DASHBOARD_LINE = re.compile(r"^\s+dashboard\s+(http://\S+)/\s")
TRY_LINE = re.compile(r"^\s+try:\s+(.+ printers)$")


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
        # AND what it printed is enough to use the venue: every token, the dashboard,
        # each agent's status page, and a first operator command that works
        check_where_to_look(lines, out)

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


def check_where_to_look(lines: list[str], out: Path) -> None:
    text = "".join(lines)
    tokens = {m.group(1): (m.group(2), m.group(3)) for m in map(TOKEN_LINE.search, lines) if m}
    assert set(tokens) == {"operator", "kiosk", "printer-a", "printer-b", "printer-c"}, text
    assert "dashboard" in tokens["operator"][1] and "jobs" in tokens["kiosk"][1], text
    dashboards = [m.group(1) for m in map(DASHBOARD_LINE.search, lines) if m]
    assert len(dashboards) == 1, text
    url = dashboards[0]
    # The operator token is the venue's: the operator API takes it, and the dashboard is there
    printers = http_json("GET", url + "/v1/printers", token=tokens["operator"][0])["items"]
    assert {p["printer_id"] for p in printers} >= {"printer-a", "printer-b", "printer-c"}
    with urllib.request.urlopen(url + "/", timeout=10) as response:
        assert response.status == 200
    # The kiosk token reads jobs (a kiosk's own: none of these four is its business)
    assert "items" in http_json("GET", url + "/v1/jobs?attendee_id=A-1001",
                               token=tokens["kiosk"][0])  # fmt: skip
    # Each agent token is the one in that agent's config
    for printer_id in ("printer-a", "printer-b", "printer-c"):
        config = tomllib.loads((out / f"agent-{printer_id}.toml").read_text())
        assert config["token"] == tokens[printer_id][0]
    # Each agent's status page answers
    for match in filter(None, map(EMULATOR_LINE.search, lines)):
        status = json.loads(urllib.request.urlopen(match.group(3) + "/status", timeout=10).read())
        assert status["printer_id"] == match.group(1), status
    # And the first command it suggests works as printed
    suggested = [m.group(1) for m in map(TRY_LINE.search, lines) if m]
    assert len(suggested) == 1, text
    *assignments, command, subcommand = shlex.split(suggested[0])
    env = dict(os.environ, **dict(a.split("=", 1) for a in assignments))
    listed = subprocess.run([command, subcommand], env=env, capture_output=True, text=True,
                            timeout=60)  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    assert "printer-a" in listed.stdout and "printer-c" in listed.stdout, listed.stdout


@pytest.mark.parametrize("option", ["--port", "--emulator-port", "--status-port"])
def test_a_port_in_use_is_refused_in_one_line_before_anything_starts(
    tmp_path: Path, option: str
) -> None:
    # GIVEN a port some other process listens on (a plain socket: it answers nothing)
    with taken_port() as port:
        out = tmp_path / "demo-out"
        # WHEN the demo is told to put its coordinator, an emulator or an agent there
        finished = subprocess.run(
            [sys.executable, "-m", "badgeline.cli", "demo", "--once", option, str(port),
             "--out", str(out)],
            capture_output=True, text=True, timeout=DEMO_TIMEOUT_S,
        )  # fmt: skip
    # THEN it exits 1 with one line naming the port and what to do, not a traceback
    # (a line more for each other port it wanted that another process holds meanwhile:
    # an emulator wants the port after it too, for its control API)
    assert finished.returncode == 1, finished.stdout + finished.stderr
    first, *others = finished.stderr.splitlines()
    assert first.startswith(f"badgeline demo: port {port} is in use by another "
                            "process (wanted by ")  # fmt: skip
    for line in (first, *others):
        assert line.startswith("badgeline demo: port ") and " is in use by " in line, line
        assert "stop that process, or choose " in line and f" with {option} (0: " in line
    # AND nothing started: no venue folder, no process, not even the "starting" line
    assert finished.stdout == ""
    assert not out.exists()
    leftovers = subprocess.run(["pgrep", "-f", str(out)], capture_output=True, text=True)
    assert leftovers.stdout == "", leftovers.stdout


def test_a_once_run_held_by_a_paused_printer_names_it_its_badges_and_the_resume_command(
    tmp_path: Path,
) -> None:
    # GIVEN a demo folder whose venue has printer-b paused (an operator did it in an
    # earlier run; the folder keeps the venue's state, pauses included)
    out = tmp_path / "demo-out"
    earlier = LocalVenue(out, printer_ids=())
    try:
        earlier.start()
        earlier.api("POST", "/v1/printers/printer-b/pause", {})
    finally:
        earlier.stop()

    # WHEN `badgeline demo --once` runs on it: badge 3 of 4 names printer-b
    finished = subprocess.run(
        [sys.executable, "-m", "badgeline.cli", "demo", "--once", "--badges", "4",
         "--out", "demo-out", "--timeout", "10"],
        capture_output=True, text=True, timeout=DEMO_TIMEOUT_S, cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2])),
    )  # fmt: skip

    # THEN as soon as the venue runs it says printer-b is paused, with the command to resume
    # it that works while this run lasts
    assert re.search(r"printer-b\s+http://\S+/printed\s+http://\S+/status\s+PAUSED",
                     finished.stdout), finished.stdout  # fmt: skip
    assert re.search(r"printer-b is paused .*\n\s+BADGELINE_URL=http://127\.0\.0\.1:\d+ "
                     r"BADGELINE_TOKEN=\S+ \S*badgeline resume printer-b\n",
                     finished.stdout), finished.stdout  # fmt: skip
    # AND at the timeout it exits 1 naming the paused printer, the badge waiting for it and
    # what to run, instead of a bare "timed out"
    assert finished.returncode == 1, finished.stdout + finished.stderr
    report = finished.stderr
    assert report.startswith("badgeline demo: "), report
    assert "badges did not print within 10 s:" in report, report
    assert re.search(r"^  printer-b\s+paused\s+1 waiting: A-1003 \(queued\)$", report,
                     re.MULTILINE), report  # fmt: skip
    assert "printer-b is paused, and demo-out keeps a pause from one run to the next" in report
    assert re.search(r"^  BADGELINE_URL=… BADGELINE_TOKEN=… \S*badgeline resume printer-b$",
                     report, re.MULTILINE), report  # fmt: skip
    assert "or delete demo-out to start from nothing." in report
    assert "Traceback" not in report
