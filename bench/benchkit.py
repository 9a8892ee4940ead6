"""What the benches share: a coordinator in its own process, tokens, job bodies,
kiosk load (closed loop and paced), CPU readings from /proc, and the facts each
report starts with (revision, load).

bench_accept.py, bench_agent.py, bench_failover.py, bench_lifecycle_commands.py,
bench_replicas.py, bench_scale.py, bench_script_lane.py, scale_bare.py, simagents.py
and vs_cups.py import it; it is not a benchmark itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

# Run from a checkout without installing: make `badgeline` importable.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp

from badgeline.coordinator.api.auth import token_digest
from badgeline.coordinator.store.embedded import free_port
from badgeline.localvenue import LocalVenue

REPO = Path(__file__).resolve().parent.parent
KIOSK_TOKEN = "bench-kiosk-" + secrets.token_hex(8)
OPERATOR_TOKEN = "bench-operator-" + secrets.token_hex(8)
HOST = "127.0.0.1"
VENUE = "bench"
HIGH_WATER_MARK = 100_000  # the largest the settings allow
PACED_LEAD_S = 0.05  # a paced round's first job is due this long after it starts
_PR_SET_PDEATHSIG = 1


def agent_token(printer_id: str) -> str:
    return f"bench-agent-{printer_id}"


def printer_ids(count: int) -> list[str]:
    return [f"printer-bench{n:02d}" for n in range(count)]


# --------------------------------------------------------------------------- processes


def _die_with_parent() -> None:
    # A child must not outlive the benchmark if it is killed: SIGTERM on our death.
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def spawn(command: list[str], log_path: Path) -> subprocess.Popen[bytes]:
    with log_path.open("wb") as log:
        return subprocess.Popen(
            command, cwd=REPO, env=child_env(), stdin=subprocess.DEVNULL, stdout=log,
            stderr=subprocess.STDOUT, preexec_fn=_die_with_parent,
        )  # fmt: skip


def stop_process(process: subprocess.Popen[bytes] | None, timeout_s: float = 10.0) -> None:
    if process is None or process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


async def wait_until_serving(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 30
    async with aiohttp.ClientSession() as session:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                tail = log.read_text(errors="replace")[-3000:]
                raise RuntimeError(f"{process.args!r} exited at start-up:\n{tail}")
            with contextlib.suppress(aiohttp.ClientError):
                async with session.get(url) as response:
                    if response.status == 200:
                        return
            await asyncio.sleep(0.05)
    raise RuntimeError(f"{url} did not answer within 30 s; see {log}")


def machine_busy_seconds() -> float:
    """CPU time all processes on the machine have used so far (Linux /proc/stat)."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc; 0 if it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    # After the command: state is field 3, so utime (14) and stime (15) are [11] and [12].
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def stop_venue(venue: LocalVenue) -> None:
    """Agents stop as usual; coordinators are killed: a graceful stop waits out the
    agents' lease long-polls."""
    for name, process in venue.processes.items():
        if name.startswith("agent"):
            process.stop()
    for name, process in venue.processes.items():
        if name.startswith("coordinator"):
            process.kill()
    venue.stop()


# --------------------------------------------------------------------------- config


def write_coordinator_config(path: Path, printers: Sequence[str], state_dir: Path) -> None:
    """A TOML the coordinator loads as shipped: defaults except what the bench needs."""
    entries: list[tuple[str, str, str, str | None]] = [
        ("bench-kiosk", "kiosk", KIOSK_TOKEN, None),
        ("bench-ops", "operator", OPERATOR_TOKEN, None),
    ]
    entries += [(f"agent-{p}", "agent", agent_token(p), p) for p in printers]
    # known_printers: the accept benchmarks submit to printers no agent runs for.
    lines = [f'venue = "{VENUE}"', f"high_water_mark = {HIGH_WATER_MARK}",
             f"state_dir = {json.dumps(str(state_dir))}",
             f"known_printers = {json.dumps(list(printers))}", ""]  # fmt: skip
    for name, role, token, printer_id in entries:
        lines += ["[[tokens]]", f'name = "{name}"', f'role = "{role}"',
                  f'sha256 = "{token_digest(token)}"']  # fmt: skip
        if printer_id:
            lines.append(f'printer_id = "{printer_id}"')
        lines.append("")
    path.write_text("\n".join(lines), encoding="utf-8")


def coordinator_command(config: Path, redis_url: str, port: int) -> list[str]:
    return [sys.executable, "-m", "badgeline.cli", "coordinator", "--config", str(config),
            "--redis-url", redis_url, "--port", str(port)]  # fmt: skip


@dataclass
class Coordinator:
    """The real coordinator, in its own process, on a Redis the caller started."""

    work_dir: Path
    redis_url: str
    printers: Sequence[str]
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.work_dir / "coordinator.log"

    @property
    def config_path(self) -> Path:
        return self.work_dir / "coordinator.toml"

    def command(self) -> list[str]:
        return coordinator_command(self.config_path, self.redis_url, self.port)

    async def start(self) -> None:
        write_coordinator_config(self.config_path, self.printers, self.work_dir / "state")
        self.process = spawn(self.command(), self.log_path)
        await wait_until_serving(self.base_url + "/healthz", self.process, self.log_path)

    def stop(self) -> None:
        stop_process(self.process)


# --------------------------------------------------------------------------- load


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile, q in 0..100."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def job_bodies(count: int, printers: Sequence[str], tag: str) -> list[bytes]:
    """Distinct, valid jobs spread round-robin over the printers."""
    return [
        json.dumps({
            "attendee_id": f"att-{tag}-{n}",
            "badge_pdf_ref": f"https://badges.example/{tag}/{n}.pdf",
            "printer_target": printers[n % len(printers)],
            "priority": 100,
            "idempotency_key": f"scan-{tag}-{n}",
        }).encode()
        for n in range(count)
    ]  # fmt: skip


async def _post(
    session: aiohttp.ClientSession, url: str, body: bytes, headers: dict[str, str]
) -> int:
    """One kiosk POST, its answer read whole; status 0 = no response."""
    try:
        async with session.post(url, data=body, headers=headers) as response:
            await response.read()
            return response.status
    except (aiohttp.ClientError, TimeoutError):
        return 0


async def post_all(
    session: aiohttp.ClientSession, url: str, bodies: Sequence[bytes], concurrency: int
) -> tuple[Counter[int], list[float]]:
    """POST every body once with `concurrency` workers; status 0 = no response."""
    statuses: Counter[int] = Counter()
    latencies: list[float] = []
    indices: Iterator[int] = iter(range(len(bodies)))
    headers = {"Authorization": f"Bearer {KIOSK_TOKEN}", "Content-Type": "application/json"}

    async def worker() -> None:
        for index in indices:
            started = time.perf_counter()
            status = await _post(session, url, bodies[index], headers)
            latencies.append((time.perf_counter() - started) * 1000)
            statuses[status] += 1

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return statuses, latencies


async def post_paced(
    session: aiohttp.ClientSession,
    url: str,
    bodies: Sequence[bytes],
    concurrency: int,
    rate: float,
) -> tuple[Counter[int], list[float]]:
    """Open loop: job i is due at start + i/rate, sent by one of `concurrency` clients.

    Latency counts from the due time, so time spent waiting for a free client
    (the server falling behind) is part of it, not hidden (no coordinated omission).
    """
    statuses: Counter[int] = Counter()
    latencies: list[float] = []
    clients = asyncio.Semaphore(concurrency)
    headers = {"Authorization": f"Bearer {KIOSK_TOKEN}", "Content-Type": "application/json"}
    start = time.perf_counter() + PACED_LEAD_S

    async def one(index: int) -> None:
        due = start + index / rate
        await asyncio.sleep(max(0.0, due - time.perf_counter()))
        async with clients:
            status = await _post(session, url, bodies[index], headers)
        latencies.append((time.perf_counter() - due) * 1000)
        statuses[status] += 1

    await asyncio.gather(*(one(index) for index in range(len(bodies))))
    return statuses, latencies


# --------------------------------------------------------------------------- report facts


def git_revision() -> str:
    """The commit measured, and whether the working tree differed from it."""
    try:
        described = subprocess.run(
            ["git", "describe", "--always", "--dirty"], cwd=REPO, capture_output=True,
            text=True, check=True,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    if "dirty" in described:
        described += " (uncommitted changes in the working tree were measured)"
    return described


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"
