"""docs/venue-setup.md, run: its shell blocks, in order, take a fresh "server" to a
coordinator serving HTTPS with a venue CA, a Pi image whose agent enrols over it, and
a kiosk's first badge printed. If a command in the page stops working, this fails.

Two folders stand in for the page's two machines (tests/docs/shell_blocks.py): the
laptop, a checkout with `.venv/bin/badgeline` running this tree, and the server,
with /etc under a temporary root and /opt/badgeline/venv/bin as this tree too.
10.20.0.5 is loopback and 8420 a free port. Stood in for: `scp` (a copy into the
server's home), `systemctl` (tests/docs/systemctl_standin.py: systemd-analyze verify,
then the unit's ExecStart with its credential and environment) and the Pi's boot (an
agent started with the config and CA bundle provisioning wrote into the image,
printing on the emulator). The package install is the page's one block not run.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
import tomllib
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from badgeline.coordinator.store.embedded import free_port
from tests.agent.agent_process import write_agent_toml
from tests.docs.shell_blocks import Block, Machine, shell_blocks
from tests.field.pi_images import BOOKWORM_CMDLINE, CONFIG_TXT, build_image, mtools_read

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "venue-setup.md"
PI_IMAGE = "2025-10-01-raspios-trixie-arm64-lite.img"
WHEEL = "badgeline-0.1.0-py3-none-any.whl"


def wrapper(path: Path, *command: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexec " + " ".join(f'"{part}"' for part in command) + ' "$@"\n')
    path.chmod(0o755)


def http_get(url: str, context: ssl.SSLContext, token: str | None = None) -> Any:
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=10, context=context) as response:
        return json.loads(response.read())


def wait_for(condition: Any, what: str, timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout_s} s waiting for {what}"
        time.sleep(0.2)


class Venue:
    """The two machines, the printer beside the Pi, and the test's hooks."""

    def __init__(self, root: Path, port: int) -> None:
        self.port = port
        self.checkout = root / "laptop" / "badgeline"
        self.server_home = root / "server" / "root"
        self.server_root = root / "server" / "fs"
        self.server_bin = root / "server" / "venv-bin"
        self.pi_root = root / "pi"
        self.processes: list[subprocess.Popen[bytes]] = []
        for folder in (self.checkout, self.server_home, self.pi_root):
            folder.mkdir(parents=True)
        (self.server_root / "etc" / "systemd" / "system").mkdir(parents=True)  # as on Debian
        # Both machines run this tree: the laptop from its checkout's .venv, the
        # server from the installed venv (the page's step 3).
        for bin_dir in (self.checkout / ".venv" / "bin", self.server_bin):
            wrapper(bin_dir / "badgeline", sys.executable, "-m", "badgeline.cli")
            wrapper(bin_dir / "python", sys.executable)
        # What the laptop's checkout has: the unit file, a built wheel (provisioning
        # copies it byte for byte) and a Raspberry Pi OS image as downloaded.
        unit = Path("badgeline") / "provision" / "files" / "badgeline-coordinator.service"
        (self.checkout / unit.parent).mkdir(parents=True)
        (self.checkout / unit).write_text((REPO / unit).read_text())
        (self.checkout / "dist").mkdir()
        with zipfile.ZipFile(self.checkout / "dist" / WHEEL, "w") as archive:
            archive.writestr("badgeline/__init__.py", '__version__ = "0.1.0"\n')
        build_image(self.checkout / PI_IMAGE, {
            "cmdline.txt": BOOKWORM_CMDLINE, "config.txt": CONFIG_TXT,
            "user-data": "#cloud-config\nhostname: raspberrypi\n",
            "meta-data": "instance-id: rpi-image\n", "network-config": "network:\n  version: 2\n",
            "issue.txt": "Raspberry Pi reference 2025-10-01\n",
        })  # fmt: skip
        env = {key: value for key, value in os.environ.items()
               if not key.startswith(("BADGELINE_", "SSL_CERT"))}  # fmt: skip
        env.update(PYTHONPATH=str(REPO), SERVER_HOME=str(self.server_home),
                   SERVER_ROOT=str(self.server_root), SERVER_BIN=str(self.server_bin))  # fmt: skip
        self.laptop = Machine("laptop", root / "laptop" / "home", self.checkout, env, preamble="""
scp() {  # stand-in: the server is a folder on this machine
    [ "${@: -1}" = "root@127.0.0.1:" ] || { echo "scp stand-in: root@127.0.0.1: only" >&2; exit 2; }
    cp "${@:1:$#-1}" "$SERVER_HOME/"
}""")  # fmt: skip
        self.laptop.home.mkdir()
        self.server = Machine(
            "server",
            self.server_home,
            self.server_home,
            env,
            preamble=f"""
systemctl() {{ "{sys.executable}" -m tests.docs.systemctl_standin "$@"; }}""",
        )
        self.emulator_port, self.emulator_control = free_port(), free_port()
        self._start([sys.executable, "-m", "badgeline.cli", "emulator", "--port",
                     str(self.emulator_port), "--control-port", str(self.emulator_control),
                     "--out", str(root / "badges")], root / "emulator.log")  # fmt: skip

    def localise(self, code: str) -> str:
        return (code.replace("/opt/badgeline/venv/bin/", f"{self.server_bin}/")
                .replace("/etc/", f"{self.server_root}/etc/")
                .replace("10.20.0.5", "127.0.0.1").replace("8420", str(self.port)))  # fmt: skip

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def trusting_the_ca(self, strict: bool = False) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.laptop.home / "venue-ca" / "ca.crt"))
        if strict:  # Python 3.13's default (Raspberry Pi OS Trixie's Python)
            context.verify_flags |= ssl.VERIFY_X509_STRICT
        return context

    def token(self, name: str) -> str:
        text = (self.laptop.home / "venue-tokens" / f"{name}.txt").read_text()
        return next(line.removeprefix("# token: ") for line in text.splitlines()
                    if line.startswith("# token: "))  # fmt: skip

    def printers(self) -> dict[str, Any]:
        operator = self.token("operator-1")
        answer = http_get(self.url + "/v1/printers", self.trusting_the_ca(), operator)
        return {p["printer_id"]: p for p in answer["items"]}

    def printed(self) -> list[dict[str, Any]]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.emulator_control}/printed") as r:
            return list(json.loads(r.read()))

    # ------------------------------------------------------------ hooks

    def boot(self, image_name: str) -> None:
        """Flash and boot: the installer puts the boot partition's agent.toml and
        coordinator-ca.pem in /etc/badgeline and starts the agent; here /etc is the
        Pi's folder and the printer is the emulator."""
        image = self.checkout / image_name
        config = tomllib.loads(mtools_read(image, "badgeline/agent.toml").decode())
        assert config["coordinator_ca_file"] == "/etc/badgeline/coordinator-ca.pem", config
        ca_file = self.pi_root / "etc" / "badgeline" / "coordinator-ca.pem"
        ca_file.parent.mkdir(parents=True)
        ca_file.write_bytes(mtools_read(image, "badgeline/coordinator-ca.pem"))
        config.pop("printer")
        config.update(coordinator_ca_file=str(ca_file), state_dir=str(self.pi_root / "state"),
                      mdns=False, status_port=0)  # fmt: skip
        printer = {"kind": "emulator", "host": "127.0.0.1", "port": self.emulator_port}
        path = write_agent_toml(self.pi_root / "agent.toml", printer, **config)
        self._start([sys.executable, "-m", "badgeline.cli", "agent", "--config", str(path)],
                    self.pi_root / "agent.log")  # fmt: skip
        printer_id = config["printer_id"]
        wait_for(lambda: self.printers().get(printer_id, {}).get("state") == "healthy",
                 f"{printer_id} to enrol and report healthy")  # fmt: skip

    def wait_printed(self, count: str) -> None:
        wait_for(lambda: len(self.printed()) == int(count), f"{count} badge(s) at the printer")

    def hook(self, block: Block) -> None:
        if block.hook is None:
            return
        name, *args = block.hook.split()
        {"boot": self.boot, "wait-printed": self.wait_printed}[name](*args)

    # ------------------------------------------------------------ processes

    def _start(self, command: list[str], log: Path) -> None:
        with log.open("ab") as out:
            self.processes.append(subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env={**os.environ, "PYTHONPATH": str(REPO)}))  # fmt: skip

    def stop(self) -> None:
        pid_file = self.server_root / "run" / "badgeline-coordinator.pid"
        pids = [int(pid_file.read_text())] if pid_file.exists() else []
        for process in reversed(self.processes):  # the agent first
            process.terminate()
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for pid in pids:  # the coordinator the systemctl stand-in started
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            deadline = time.monotonic() + 20
            while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
                time.sleep(0.1)
            if Path(f"/proc/{pid}").exists():
                os.kill(pid, signal.SIGKILL)


@pytest.fixture
def venue(tmp_path: Path) -> Iterator[Venue]:
    running = Venue(tmp_path, free_port())
    try:
        yield running
    finally:
        running.stop()


def test_every_shell_block_of_the_page_carries_a_marker() -> None:
    # GIVEN/WHEN the page is read THEN every sh block says whether and where it runs
    blocks = shell_blocks(DOC.read_text())
    assert {block.machine for block in blocks} == {"laptop", "server", "skip", "output"}
    skipped = [block for block in blocks if block.machine == "skip"]
    assert len(skipped) == 1 and "pip install" in skipped[0].code  # only the network install


@pytest.mark.timeout(900)
def test_the_venue_setup_page_takes_a_fresh_server_to_a_printed_badge(venue: Venue) -> None:
    # GIVEN the page's blocks, and the two machines it talks about
    blocks = shell_blocks(DOC.read_text())
    machines = {"laptop": venue.laptop, "server": venue.server}
    printed: list[tuple[Block, str]] = []
    # WHEN each runs, in order, where it says (and each output shown matches what ran)
    for block in blocks:
        if block.machine == "skip":
            continue
        if block.machine == "output":
            assert printed, f"line {block.line}: an output block with no block before it"
            assert printed[-1][1] == venue.localise(block.code), (
                f"line {block.line}: the page shows an output that is not what ran:\n"
                f"{printed[-1][1]}")  # fmt: skip
            continue
        printed.append((block, machines[block.machine].run(venue.localise(block.code),
                                                           block.line)))  # fmt: skip
        venue.hook(block)

    def output_of(command: str) -> str:
        return next(out for block, out in printed if command in block.code)

    # THEN the venue's certificates pass the strict checks of the Pi's Python
    assert "tls.crt: OK" in output_of("openssl verify")
    with venue.trusting_the_ca(strict=True).wrap_socket(
        socket.create_connection(("127.0.0.1", venue.port), timeout=10),
        server_hostname="127.0.0.1",
    ) as tls:  # fmt: skip
        assert tls.version() in ("TLSv1.2", "TLSv1.3")
    # AND the coordinator ran from its unit, as systemd reports it
    status = output_of("systemctl status")
    assert "active (running)" in status and 'Status: "serving venue main-hall"' in status
    # AND the laptop reached it over HTTPS, first with no printer, then with printer-01
    before_boot = output_of("healthz")
    assert '"ok": true' in before_boot and "printer-01" not in before_boot, before_boot
    after_boot = next(out for block, out in printed
                      if block.code.strip() == ".venv/bin/badgeline printers")  # fmt: skip
    assert "printer-01" in after_boot and "healthy" in after_boot, after_boot
    # AND the agent enrolled with its code: it keeps its own token now
    assert (venue.pi_root / "state" / "agent-token.json").exists()
    # AND the kiosk's badge was accepted, printed once, and the kiosk sees it printed
    submitted = output_of("/v1/jobs\n")
    upload, answer = map(json.loads, submitted.strip().splitlines())
    assert upload["ref"].startswith("artifact://"), submitted
    job = answer
    assert job["state"] == "queued" and job["printer_id"] == "printer-01", submitted
    assert [row["job_id"] for row in venue.printed()] == [job["job_id"]]
    seen = json.loads(output_of("?attendee_id=A-1001"))
    assert [(j["job_id"], j["state"]) for j in seen["items"]] == [(job["job_id"], "printed")]
