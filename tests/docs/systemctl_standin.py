"""`systemctl` for a doc's shell blocks, on a machine without systemd as PID 1.

`python -m tests.docs.systemctl_standin VERB [UNIT] [--no-pager]`, with the
server's root folder in $SERVER_ROOT (its /etc/systemd/system holds the units
the doc installed) and the real path of /opt/badgeline/venv/bin in $SERVER_BIN.

- `daemon-reload`: `systemd-analyze verify` every installed unit with its
  drop-ins; any complaint fails.
- `enable --now UNIT`: start the unit's ExecStart as systemd would for it: its
  Environment= (drop-ins included, `%d` the credentials folder),
  LoadCredential= copied into that folder, ${STATE_DIRECTORY} made, a
  $NOTIFY_SOCKET; wait (TimeoutStartSec) for READY=1, then return, leaving it
  running. Its pid goes to run/UNIT.pid, the STATUS= it sent to run/UNIT.status.
  Not stood in: the user, sandbox and restarts (tests/field/ checks those).
- `status UNIT`: active (running) and the status text while the pid lives, else
  exit 3, as systemctl does.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

INSTALLED_BIN = "/opt/badgeline/venv/bin/"


def server_root() -> Path:
    return Path(os.environ["SERVER_ROOT"])


def on_server(word: str) -> str:
    """A word of a unit as it reads on the server: /opt/badgeline/venv/bin and /etc
    are the server's folders here."""
    if word.startswith(INSTALLED_BIN):
        return os.environ["SERVER_BIN"] + "/" + word.removeprefix(INSTALLED_BIN)
    return str(server_root()) + word if word.startswith("/etc/") else word


def units_dir() -> Path:
    return server_root() / "etc" / "systemd" / "system"


def unit_lines(unit: str) -> list[tuple[str, str]]:
    """(key, value) of the unit file and then its drop-ins, in systemd's order."""
    files = [units_dir() / unit, *sorted((units_dir() / f"{unit}.d").glob("*.conf"))]
    pairs = []
    for path in files:
        for line in path.read_text().splitlines():
            if "=" in line and not line.lstrip().startswith(("#", ";", "[")):
                key, _, value = line.partition("=")
                pairs.append((key.strip(), value.strip()))
    return pairs


def daemon_reload() -> int:
    checked = server_root() / "run" / "verify"
    shutil.rmtree(checked, ignore_errors=True)
    checked.mkdir(parents=True)
    for unit in sorted(units_dir().glob("*.service")):
        # verify wants ExecStart's binary to exist: the server's real one
        copy = checked / unit.name
        copy.write_text(unit.read_text().replace(INSTALLED_BIN, os.environ["SERVER_BIN"] + "/"))
        drop_ins = units_dir() / f"{unit.name}.d"
        if drop_ins.is_dir():
            shutil.copytree(drop_ins, checked / drop_ins.name)
        result = subprocess.run(["systemd-analyze", "verify", "--man=no", str(copy)],
                                capture_output=True, text=True, timeout=60)  # fmt: skip
        if result.returncode != 0 or result.stderr.strip():
            print(f"systemd-analyze verify {unit.name}:\n{result.stderr}", file=sys.stderr)
            return 1
    return 0


def service_setup(unit: str, credentials: Path) -> tuple[dict[str, str], list[str], float]:
    """The environment, command and start timeout systemd would give the unit, with
    its credentials copied where `%d` points."""
    env = dict(os.environ, CREDENTIALS_DIRECTORY=str(credentials))
    exec_start = ""
    start_timeout_s = 90.0
    for key, value in unit_lines(unit):
        value = value.replace("%d", str(credentials))
        if key == "ExecStart":
            exec_start = value
        elif key == "Environment":
            env_key, _, env_value = value.strip('"').partition("=")
            env[env_key] = on_server(env_value)
        elif key == "LoadCredential":
            credential, _, source = value.partition(":")
            shutil.copyfile(on_server(source), credentials / credential)
            (credentials / credential).chmod(0o400)
        elif key == "StateDirectory":
            state = server_root() / "var" / "lib" / value
            state.mkdir(parents=True, exist_ok=True)
            env["STATE_DIRECTORY"] = str(state)
        elif key == "TimeoutStartSec":
            start_timeout_s = float(value)
    # The test's coordinators stay off mDNS: other tests on this machine share it.
    env["BADGELINE_MDNS"] = "false"
    words = exec_start.replace("${STATE_DIRECTORY}", env["STATE_DIRECTORY"]).split()
    return env, [on_server(word) for word in words], start_timeout_s


def enable_now(unit: str) -> int:
    name = unit.removesuffix(".service")
    run = server_root() / "run"
    credentials = run / "credentials" / unit
    credentials.mkdir(parents=True, exist_ok=True)
    env, command, start_timeout_s = service_setup(unit, credentials)
    # In Linux's abstract namespace, as systemd itself may hand it out ("@…"): a path
    # under the test's folder can pass the 108 bytes a socket's path may have.
    notify_name = f"badgeline-standin-{os.getpid()}-{name}"
    log_path = run / f"{name}.log"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as notify, log_path.open("ab") as log:
        notify.bind("\0" + notify_name)
        notify.settimeout(0.5)
        env["NOTIFY_SOCKET"] = "@" + notify_name
        process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
        (run / f"{name}.pid").write_text(str(process.pid))
        deadline = time.monotonic() + start_timeout_s
        while time.monotonic() < deadline:
            if process.poll() is not None:
                print(f"{unit} exited with {process.returncode} while starting; its log:\n"
                      f"{log_path.read_text()[-3000:]}", file=sys.stderr)  # fmt: skip
                return 1
            try:
                message = notify.recv(4096).decode()
            except TimeoutError:
                continue
            fields = dict(line.partition("=")[::2] for line in message.splitlines())
            if "STATUS" in fields:
                (run / f"{name}.status").write_text(fields["STATUS"])
            if fields.get("READY") == "1":
                return 0
    print(f"{unit}: no READY=1 within {start_timeout_s:g} s", file=sys.stderr)
    return 1


def status(unit: str) -> int:
    name = unit.removesuffix(".service")
    run = server_root() / "run"
    pid_file = run / f"{name}.pid"
    alive = pid_file.exists() and Path(f"/proc/{pid_file.read_text()}").exists()
    description = next((v for k, v in unit_lines(unit) if k == "Description"), unit)
    print(f"● {unit} - {description}")
    if not alive:
        print("     Active: inactive (dead)")
        return 3
    text = (run / f"{name}.status").read_text() if (run / f"{name}.status").exists() else ""
    print(f"     Active: active (running)\n   Main PID: {pid_file.read_text()}")
    print(f'     Status: "{text}"')
    return 0


def main(argv: list[str]) -> int:
    args = [arg for arg in argv if arg != "--no-pager"]
    if args == ["daemon-reload"]:
        return daemon_reload()
    if len(args) == 3 and args[:2] == ["enable", "--now"]:
        return enable_now(args[2] if args[2].endswith(".service") else args[2] + ".service")
    if len(args) == 2 and args[0] == "status":
        return status(args[1] if args[1].endswith(".service") else args[1] + ".service")
    print(f"systemctl stand-in: {' '.join(argv)!r} is not stood in for", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
