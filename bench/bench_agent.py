"""Agent start-up time and idle memory, measured on real processes.

    .venv/bin/python bench/bench_agent.py [--runs 7] [--settle 4] [--explain]
                                          [--no-bytecode-cache]

A benchmark, not a test: it prints figures and asserts nothing. It starts the
coordinator (with its embedded Redis) and one printer emulator through
`LocalVenue`, then starts `badgeline agent --config …` one process after the
other on the same journal: one start not counted, then `--runs` measured.

- Start-up time: from just before the agent process is spawned to the first
  heartbeat the coordinator records from it (each start gets its own
  agent_id). The heartbeat's time is read back from `GET /v1/printers`
  (`last_heartbeat_age_s`, subtracted from the time of the answer);
  coordinator and agent share this machine's clock. Polling every 10 ms adds
  up to ~10 ms. Beside it, the CPU seconds the agent and its children had
  used by then (/proc/<pid>/stat), which a busy machine inflates far less.
- Idle RSS: `VmRSS` (and `RssAnon`, the private part) from /proc/<pid>/status
  once the agent has sent heartbeats for `--settle` seconds, for the agent
  process and, apart, for its children (the badge render worker, a plain
  subprocess that imports PDFium and Pillow, see
  badgeline/badge/sandbox.py; by default it runs only from a badge until
  `render_worker_idle_s` without one, so an idle agent has none).
- Bytecode: with PYTHONDONTWRITEBYTECODE=1 inherited, every start would compile
  badgeline from source, which an installed wheel never does; so the processes
  cache bytecode under a PYTHONPYCACHEPREFIX in the temporary directory
  (`--no-bytecode-cache` keeps the inherited setting).

Targets (docs/benchmarks.md): start-up ≤ 1.5 s, idle RSS ≤ 45 MB. Both are measured four
ways: with the agent's defaults but `mdns = false` (as the bench's venue
configures its agents); with `render_worker_idle_s = 0` (the worker started
with the agent and kept, as while badges come), to show what the worker
costs; with `mdns = true`, the agent's real default, where it advertises
itself and so loads zeroconf; and as `badgeline provision` sets up a Pi, with
no `coordinator_url`: the agent also browses mDNS for its venue's coordinator
(advertised on 127.0.0.1 by `python -m badgeline.discovery`), so its start-up
includes finding it.

`--explain` adds where the time and memory go: `python -X importtime` of the
agent's modules, and VmRSS, RssAnon and the Python heap (tracemalloc) after
each layer of imports the agent needs, in order.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

# Run from a checkout without installing: make `badgeline` importable.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchkit import cpu_seconds

from badgeline.localvenue import LocalVenue, ManagedProcess

PRINTER = "printer-a"
START_TARGET_S = 1.5
RSS_TARGET_MB = 45.0
POLL_S = 0.01
LOOPBACK = "127.0.0.1"
AGENT_MODULES = ("badgeline.agent.main", "badgeline.agent.service")


@dataclass
class Run:
    startup_s: float
    startup_cpu_s: float
    agent_rss_mb: float
    agent_anon_mb: float
    children_rss_mb: float
    children: list[str]

    @property
    def total_rss_mb(self) -> float:
        return self.agent_rss_mb + self.children_rss_mb


# ------------------------------------------------------------ /proc


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    """VmRSS (or another kB field of /proc/<pid>/status) in MB of 10^6 bytes; 0 if gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    match = re.search(rf"^{field}:\s+(\d+) kB", status, re.MULTILINE)
    return int(match.group(1)) * 1024 / 1e6 if match else 0.0


def describe(pid: int) -> str:
    """A child's role and VmRSS: the render worker (or, before it was a plain subprocess,
    multiprocessing's resource tracker)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return "gone"
    role = "resource_tracker" if "resource_tracker" in cmdline else (
        "render worker" if "render_worker" in cmdline or "spawn_main" in cmdline
        else cmdline[:40])  # fmt: skip
    return f"{role} {rss_mb(pid):.1f}"


def children_of(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


# ------------------------------------------------------------ the coordinator's view


def heartbeat_at(venue: LocalVenue, agent_id: str) -> float | None:
    """Wall-clock time of the printer's latest heartbeat if `agent_id` sent it."""
    printers = venue.api("GET", "/v1/printers")["items"]
    answered_at = time.time()
    for printer in printers:
        if printer["printer_id"] == PRINTER and printer["agent_id"] == agent_id:
            return answered_at - float(printer["last_heartbeat_age_s"])
    return None


def measure_once(venue: LocalVenue, settle_s: float) -> Run:
    # A new agent_id per run, so that a late heartbeat of the previous agent
    # process is never taken for the first one of this process.
    agent_id = f"bench-{os.getpid()}-{time.monotonic_ns()}"
    os.environ["BADGELINE_AGENT_AGENT_ID"] = agent_id
    try:
        spawned_at = time.time()
        agent: ManagedProcess = venue.start_agent(PRINTER)
    finally:
        del os.environ["BADGELINE_AGENT_AGENT_ID"]
    assert agent.process is not None
    pid = agent.process.pid
    try:
        deadline = time.monotonic() + 60
        while (beat := heartbeat_at(venue, agent_id)) is None:
            if time.monotonic() > deadline or not agent.running:
                raise RuntimeError(f"no heartbeat; see {agent.log_path}")
            time.sleep(POLL_S)
        cpu = cpu_seconds(pid) + sum(cpu_seconds(child) for child in children_of(pid))
        time.sleep(settle_s)
        children = children_of(pid)
        return Run(beat - spawned_at, cpu, rss_mb(pid), rss_mb(pid, "RssAnon"),
                   sum(map(rss_mb, children)), [describe(child) for child in children])  # fmt: skip
    finally:
        agent.stop()


def measure(venue: LocalVenue, runs: int, settle_s: float, worker_idle_s: str,
            mdns: bool = False) -> list[Run]:  # fmt: skip
    """`runs` measured starts after one that is not counted (it fills the bytecode cache)."""
    settings = {"BADGELINE_AGENT_RENDER_WORKER_IDLE_S": worker_idle_s,
                "BADGELINE_AGENT_MDNS": "true" if mdns else "false"}  # fmt: skip
    os.environ.update(settings)
    try:
        measure_once(venue, 0.0)
        return [measure_once(venue, settle_s) for _ in range(runs)]
    finally:
        for name in settings:
            del os.environ[name]


# ------------------------------------------------------------ report


def report(label: str, results: list[Run]) -> None:
    startup = [r.startup_s for r in results]
    print(f"\n{label} ({len(results)} runs, each a new agent process)")
    print("  run  start-up s  (CPU s)  agent VmRSS MB  (RssAnon)  children VmRSS MB  total MB"
          "  children")  # fmt: skip
    for number, r in enumerate(results, 1):
        print(f"  {number:>3}  {r.startup_s:>10.3f}  ({r.startup_cpu_s:>5.2f})"
              f"  {r.agent_rss_mb:>14.1f}  ({r.agent_anon_mb:>7.1f})"
              f"  {r.children_rss_mb:>17.1f}  {r.total_rss_mb:>8.1f}"
              f"  {', '.join(r.children) or '-'}")  # fmt: skip
    agent_rss = statistics.median(r.agent_rss_mb for r in results)
    total_rss = statistics.median(r.total_rss_mb for r in results)
    median_start = statistics.median(startup)
    median_cpu = statistics.median(r.startup_cpu_s for r in results)
    print(
        f"  start-up median {median_start:.3f} s (min {min(startup):.3f}, max {max(startup):.3f})"
        f"  target ≤ {START_TARGET_S} s: {verdict(median_start <= START_TARGET_S)};"
        f" CPU used by then (agent + children) median {median_cpu:.2f} s"
    )
    print(f"  idle RSS median: agent {agent_rss:.1f} MB, agent + children {total_rss:.1f} MB"
          f"  target ≤ {RSS_TARGET_MB:.0f} MB: agent {verdict(agent_rss <= RSS_TARGET_MB)},"
          f" with children {verdict(total_rss <= RSS_TARGET_MB)}")  # fmt: skip


def verdict(met: bool) -> str:
    return "met" if met else "MISSED"


# ------------------------------------------------------------ --explain


def explain_imports(top: int = 15) -> None:
    """Cumulative import time of the agent's modules in a fresh interpreter (wall clock)."""
    code = "import " + ", ".join(AGENT_MODULES)
    stderr = subprocess.run([sys.executable, "-X", "importtime", "-c", code],
                            capture_output=True, text=True, check=True).stderr  # fmt: skip
    rows = []
    for line in stderr.splitlines():
        parts = line.removeprefix("import time:").split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].rstrip()))
    print(f"\npython -X importtime -c '{code}' (wall clock, so inflated on a busy machine);"
          f" top {top} by cumulative time:")  # fmt: skip
    for us, name in sorted(rows, reverse=True)[:top]:
        print(f"  {us / 1000:>7.1f} ms  {name.strip()}")


# Imported one after the other in a fresh interpreter, in the order the agent needs
# them: each step is what that import adds on top of everything before it.
IMPORT_STEPS = ("ssl", "asyncio", "aiosqlite", "pydantic.main", "h11", "one-model",
                "badgeline.agent.main", "badgeline.agent.service",
                "zeroconf.asyncio", "escpos")  # fmt: skip
_STEPS_CODE = """
import re, sys, time, tracemalloc
if sys.argv[1] == 'traced':
    tracemalloc.start()
def memory():
    if tracemalloc.is_tracing():
        return [tracemalloc.get_traced_memory()[0] // 1000, 0]
    status = open('/proc/self/status').read()
    return [int(re.search(key + r':\\s+(\\d+)', status).group(1)) for key in ('VmRSS', 'RssAnon')]
print('interpreter', 0, *memory())
for name in sys.argv[2:]:
    started = time.perf_counter()
    if name == 'escpos':
        from badgeline.agent.printers._escpos import escpos_api
        escpos_api()
    elif name == 'one-model':
        # The first model built loads what every model needs (pydantic-core's
        # validators, pydantic's plugin loader): the stack's floor, before any agent code.
        import pydantic
        type('One', (pydantic.BaseModel,), {'__annotations__': {'a': int}})(a=1)
    else:
        __import__(name)
    print(name, time.perf_counter() - started, *memory())
"""


def import_steps(mode: str) -> list[tuple[str, float, float, float]]:
    """(module, import seconds, first measure MB, second measure MB) per import step."""
    command = [sys.executable, "-c", _STEPS_CODE, mode, *IMPORT_STEPS]
    stdout = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    steps = []
    for line in stdout.splitlines():
        name, seconds, first_kb, second_kb = line.split()
        steps.append((name, float(seconds), int(first_kb) / 1000, int(second_kb) / 1000))
    return steps


def explain_memory() -> None:
    """What each layer of the agent's imports adds: VmRSS, private memory, Python heap."""
    traced = {name: heap for name, _, heap, _ in import_steps("traced")}
    print(
        "\nmemory step by step in a fresh interpreter (zeroconf loads only with mdns on,"
        " which this bench turns off; escpos = the agent's escpos_api(), which only a USB"
        " printer link or an escpos_profile setting loads; one-model = a one-field pydantic"
        " model built and used, so the row above the agent's modules is the floor of this"
        " stack; Python heap from tracemalloc, a separate run):"
    )
    print(
        "  import                     ms  VmRSS MB (+step)  RssAnon MB (+step)"
        "  Python heap MB (+step)"
    )
    before = (0.0, 0.0, 0.0)
    for name, seconds, rss, anon in import_steps("rss"):
        heap = traced.get(name, 0.0)
        print(f"  {name:<24} {seconds * 1000:>5.0f}  {rss:>8.1f} (+{rss - before[0]:4.1f})"
              f"  {anon:>10.1f} (+{anon - before[1]:4.1f})"
              f"  {heap:>14.1f} (+{heap - before[2]:4.1f})")  # fmt: skip
        before = (rss, anon, heap)


def interpreter_baseline_mb() -> float:
    """RSS of a bare interpreter of this venv: the floor under any Python agent."""
    process = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                               stdin=subprocess.PIPE)  # fmt: skip
    time.sleep(0.5)
    value = rss_mb(process.pid)
    assert process.stdin is not None
    process.stdin.close()
    process.wait()
    return value


def bytecode_cache(root: Path, enabled: bool) -> str:
    """Let the processes cache compiled modules, as an installed wheel has them.

    A checkout run with PYTHONDONTWRITEBYTECODE=1 (as some CI and sandboxes
    set) has no .pyc for badgeline, so every agent start compiles its sources.
    The cache goes to a prefix directory, never into the source tree.
    """
    if not enabled:
        inherited = os.environ.get("PYTHONDONTWRITEBYTECODE")
        return f"as inherited (PYTHONDONTWRITEBYTECODE={inherited!r})"
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(root / "pycache")
    return "cached under PYTHONPYCACHEPREFIX (filled by a first start that is not counted)"


def run_all(root: Path, runs: int, settle_s: float) -> None:
    # No mDNS: another coordinator on this host advertising the same venue name
    # would make ours exit at start-up (NameConflict).
    venue = LocalVenue(root, printer_ids=(PRINTER,), extra_coordinator_config={"mdns": False})
    (venue.root / "logs").mkdir(parents=True, exist_ok=True)
    try:
        venue.start_coordinator()
        venue.start_emulator(PRINTER)
        report("defaults (render worker from the first badge until render_worker_idle_s = 600)",
               measure(venue, runs, settle_s, worker_idle_s="600"))  # fmt: skip
        report("render_worker_idle_s = 0 (comparison: render worker from start-up, kept)",
               measure(venue, runs, settle_s, worker_idle_s="0"))  # fmt: skip
        # The agent's own default: it advertises itself (zeroconf loaded). Its
        # coordinator_url is configured, so it does not browse for one.
        report("defaults with mdns = true (the agent advertises itself on the LAN)",
               measure(venue, runs, settle_s, worker_idle_s="600", mdns=True))  # fmt: skip
        # As `badgeline provision` sets a Pi up by default: no coordinator_url, so the
        # agent also browses for its venue's coordinator and follows it.
        with advertised_coordinator(venue) as venue_name:
            venue.agent_overrides[PRINTER] = {"coordinator_url": None, "venue": venue_name,
                                              "mdns_interfaces": [LOOPBACK]}  # fmt: skip
            report("defaults with mdns = true and no coordinator_url (found by mDNS, as"
                   " provisioned)",
                   measure(venue, runs, settle_s, worker_idle_s="600", mdns=True))  # fmt: skip
    finally:
        venue.stop()


@contextlib.contextmanager
def advertised_coordinator(venue: LocalVenue) -> Iterator[str]:
    """The venue's coordinator advertised on loopback under a venue name of its own
    (`python -m badgeline.discovery`, in its own process); yields the name."""
    name = f"bench-{secrets.token_hex(4)}"
    advertiser = subprocess.Popen(
        [sys.executable, "-m", "badgeline.discovery", "--interface", LOOPBACK,
         "advertise-coordinator", "--venue", name, "--port", str(venue.coordinator_port)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert advertiser.stdout is not None
        line = advertiser.stdout.readline()
        if not line.startswith("ready"):
            raise RuntimeError(f"the mDNS advertiser did not start: {line!r}")
        yield name
    finally:
        advertiser.terminate()
        advertiser.wait(10)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="agent starts per configuration")
    parser.add_argument("--settle", type=float, default=4.0,
                        help="seconds of heartbeats before RSS is read")  # fmt: skip
    parser.add_argument("--explain", action="store_true", help="import time and memory by module")
    parser.add_argument("--no-bytecode-cache", action="store_true",
                        help="keep an inherited PYTHONDONTWRITEBYTECODE")  # fmt: skip
    args = parser.parse_args()
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="bench-agent-") as root:
        print(f"bytecode: {bytecode_cache(Path(root), enabled=not args.no_bytecode_cache)}")
        run_all(Path(root), args.runs, args.settle)
        baseline = interpreter_baseline_mb()
        print(f"\nbare interpreter RSS (python -c 'sys.stdin.read()'): {baseline:.1f} MB")
        if args.explain:
            explain_imports()
            explain_memory()
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
