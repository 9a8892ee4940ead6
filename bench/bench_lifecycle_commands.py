"""Redis commands per job lifecycle (accept -> lease -> start -> ack), from INFO commandstats.

    .venv/bin/python bench/bench_lifecycle_commands.py [--jobs 200] [--printers 4]
        [--long-poll-jobs 50] [--lease-max 1]

Starts one Redis (EmbeddedRedis, appendfsync always as shipped) and the real
coordinator in its own process (`python -m badgeline.cli coordinator --config
<toml> --redis-url <url>`), then drives jobs through the HTTP API the way kiosks
and agents do: kiosk token for POST /v1/jobs, each printer's own agent token for
heartbeat, lease, start and ack. Every phase runs between CONFIG RESETSTAT and
INFO commandstats, so each count is the commands Redis executed in that phase.

Two numbers per job:

- round trips: commands the coordinator sent over the network (an EVALSHA per
  script call, and anything it sends outside scripts);
- total: every command Redis executed, including those run inside the scripts
  (commandstats counts both, so total = round trips + commands inside scripts).

INFO commandstats cannot tell the two apart, so a MONITOR connection runs beside
it and attributes each command to the EVALSHA it ran under (valkey logs a
script's commands right after its EVALSHA, marked `lua`). The lease scanner's
and failover monitor's scripts and connection health checks are counted apart as
background: they cost per second (or per heartbeat), not per job. The bench's
own CONFIG RESETSTAT, ECHO (phase markers), INFO and the MULTI/EXEC around them
are left out of every figure.

Scenario 1 (backlog): N jobs are accepted, then the agents lease them with
wait=0, then start and ack each. Scenario 2 (idle printer): the agent is already
long-polling when the kiosk submits, as at a desk with no queue; its first lease
call finds nothing and runs again when the enqueue wakes it.

A benchmark, not a test: it asserts nothing. Everything it starts is stopped and
its temporary directory removed at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import re
import secrets
import shlex
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Run from a checkout without installing: make `badgeline` and benchkit importable.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import aiohttp
from benchkit import (
    KIOSK_TOKEN,
    VENUE,
    Coordinator,
    agent_token,
    git_revision,
    job_bodies,
    printer_ids,
)
from redis.asyncio import Redis

from badgeline.coordinator.store.embedded import EmbeddedRedis
from badgeline.coordinator.store.keys import VenueKeys
from badgeline.coordinator.store.script_loader import load_scripts

# The bench's own commands, never the coordinator's (checked below): left out.
BENCH_COMMANDS = frozenset({"config|resetstat", "info", "echo", "multi", "exec"})
# Upkeep: the lease scanner and the failover monitor (every interval, and after a
# heartbeat that changes a printer's state) run these scripts and read the printer
# registry (SMEMBERS printers, HMGET printer:<id>), never on a job's request path:
# the bench targets plain printer ids, so no request is routed through the registry.
# Other plain commands on a printer's keys (the paper level a heartbeat records)
# are counted with the heartbeats.
UPKEEP_SCRIPTS = frozenset(
    {"expire_leases", "check_heartbeats", "failover", "resolve_inflight", "promote_retries",
     "unpark"}
)  # fmt: skip
UPKEEP_COMMANDS = frozenset({"PING"})  # redis-py's health check of an idle connection
REGISTRY_READS = frozenset({"SMEMBERS", "HMGET"})
KEYS = VenueKeys(VENUE)
EVALSHA_SHA = re.compile(r'\] "EVALSHA" "([0-9a-f]{40})"')
MONITOR_LINE = re.compile(
    r'^\+?[\d.]+ \[\d+ (?P<source>[^\]]+)\] "(?P<command>(?:[^"\\]|\\.)*)"'
    r'(?: "(?P<arg>(?:[^"\\]|\\.)*)")?'
)


def script_names() -> dict[str, str]:
    """SHA1 -> operation name, exactly as the coordinator registers its scripts."""
    scripts = load_scripts(Redis())  # registering computes the SHA locally, no I/O
    return {loaded.script.sha: name for name, loaded in scripts.items()}


# --------------------------------------------------------------------------- monitor


@dataclass
class RoundTrip:
    """One command a client sent, and the commands its script ran (if any)."""

    source: str
    label: str
    key: str = ""
    inner: list[str] = field(default_factory=list)

    @property
    def commands(self) -> int:
        return 1 + len(self.inner)

    @property
    def kind(self) -> str:
        """job (a request's own work), heartbeat (the agents' periodic beat) or upkeep."""
        name = self.label.split(" ", 1)[-1]
        if name in UPKEEP_SCRIPTS or self.label in UPKEEP_COMMANDS:
            return "upkeep"
        registry = self.key == KEYS.printers or self.key.startswith(KEYS.printer(""))
        if self.label in REGISTRY_READS and registry:
            return "upkeep"
        if name == "heartbeat" or (registry and not self.label.startswith("EVALSHA")):
            return "heartbeat"  # the beat's script, and what a beat writes about its printer
        return "job"


class Monitor:
    """A MONITOR connection: every command Redis runs, with who sent it."""

    def __init__(self, port: int, shas: dict[str, str]) -> None:
        self.port = port
        self.shas = shas
        self.lines: list[str] = []
        self.script_calls: Counter[str] = Counter()  # operation -> EVALSHAs seen
        self._seen = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def start(self) -> None:
        reader, self._writer = await asyncio.open_connection("127.0.0.1", self.port)
        self._writer.write(b"MONITOR\r\n")
        await self._writer.drain()
        if (await reader.readline()).strip() != b"+OK":
            raise RuntimeError("MONITOR refused")
        self._task = asyncio.create_task(self._read(reader))

    async def _read(self, reader: asyncio.StreamReader) -> None:
        while raw := await reader.readline():
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            match = EVALSHA_SHA.search(line)
            if match:
                self.script_calls[self.shas.get(match[1], match[1])] += 1
            async with self._seen:
                self.lines.append(line)
                self._seen.notify_all()

    async def wait_for(self, text: str, timeout_s: float = 10.0) -> int:
        """Index of the first line containing `text`, once it has arrived."""
        checked = 0
        found: list[int] = []

        def arrived() -> bool:
            nonlocal checked
            while checked < len(self.lines) and not found:
                if text in self.lines[checked]:
                    found.append(checked)
                checked += 1
            return bool(found)

        async with self._seen:
            await asyncio.wait_for(self._seen.wait_for(arrived), timeout_s)
        return found[0]

    def round_trips(self, first: int, last: int, exclude_source: str) -> list[RoundTrip]:
        trips: list[RoundTrip] = []
        for line in self.lines[first + 1 : last]:
            match = MONITOR_LINE.match(line)
            if match is None:
                continue
            source, command = match["source"], match["command"].upper()
            if source == "lua" and trips:
                trips[-1].inner.append(command)
            elif source != exclude_source:
                arg = match["arg"] or ""
                trips.append(RoundTrip(source, self._label(command, arg), arg))
        return trips

    def _label(self, command: str, arg: str | None) -> str:
        if command in ("EVALSHA", "EVALSHA_RO") and arg:
            return f"{command} {self.shas.get(arg, arg[:8])}"
        if command in ("CLIENT", "SCRIPT") and arg:
            return f"CLIENT {arg.upper()}"
        return command

    async def stop(self) -> None:
        if self._writer is not None:
            self._writer.close()
            with contextlib.suppress(ConnectionError):
                await self._writer.wait_closed()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, ConnectionError):
                await self._task


# --------------------------------------------------------------------------- phases


@dataclass
class Phase:
    name: str
    jobs: int
    http_calls: int
    stats: Counter[str]  # INFO commandstats calls, the bench's own left out
    trips: list[RoundTrip]
    wall_s: float
    work: frozenset[str] = frozenset({"job"})  # kinds of round trip this phase measures

    def of_kind(self, *kinds: str) -> list[RoundTrip]:
        return [t for t in self.trips if t.kind in kinds]

    @property
    def job_trips(self) -> list[RoundTrip]:
        return [t for t in self.trips if t.kind in self.work]

    @property
    def other_trips(self) -> list[RoundTrip]:
        return [t for t in self.trips if t.kind not in self.work]

    @property
    def commandstats_total(self) -> int:
        return sum(self.stats.values())

    @property
    def monitor_total(self) -> int:
        return sum(t.commands for t in self.trips)

    @property
    def job_total(self) -> int:
        """Commandstats total less what MONITOR attributes to heartbeats and upkeep."""
        return self.commandstats_total - sum(t.commands for t in self.other_trips)


Action = Callable[[], Awaitable[int]]  # returns the number of HTTP calls it made


@dataclass
class Bench:
    args: argparse.Namespace
    coordinator: Coordinator
    stats: Redis
    stats_source: str
    monitor: Monitor
    session: aiohttp.ClientSession
    phases: list[Phase] = field(default_factory=list)
    leases: dict[str, str] = field(default_factory=dict)  # job_id -> lease_id
    printer_of: dict[str, str] = field(default_factory=dict)  # job_id -> printer_id
    heartbeat_interval_s: float = 1.0  # as the coordinator tells its agents

    async def measure(
        self, name: str, jobs: int, action: Action, work: frozenset[str] = frozenset({"job"})
    ) -> Phase:
        marker = secrets.token_hex(6)
        # Each pair runs as one transaction, so MONITOR's window (between the two
        # ECHOs) is exactly commandstats' window (between RESETSTAT and INFO).
        async with self.stats.pipeline(transaction=True) as pipe:
            pipe.config_resetstat()
            pipe.echo(f"bench-begin-{marker}")
            await pipe.execute()
        started = time.perf_counter()
        calls = await action()
        wall = time.perf_counter() - started
        async with self.stats.pipeline(transaction=True) as pipe:
            pipe.info("commandstats")
            pipe.echo(f"bench-end-{marker}")
            raw: dict[str, Any] = (await pipe.execute())[0]
        first = await self.monitor.wait_for(f"bench-begin-{marker}")
        last = await self.monitor.wait_for(f"bench-end-{marker}")
        stats = Counter({k.removeprefix("cmdstat_"): int(v["calls"]) for k, v in raw.items()})
        for command in BENCH_COMMANDS:
            stats.pop(command, None)
        trips = self.monitor.round_trips(first, last, self.stats_source)
        phase = Phase(name, jobs, calls, stats, trips, wall, work)
        self.phases.append(phase)
        return phase

    # ---- HTTP, as a kiosk and as agents

    def url(self, path: str) -> str:
        return self.coordinator.base_url + path

    async def call(self, path: str, token: str, body: Any, expect: int = 200) -> Any:
        headers = {"Authorization": f"Bearer {token}"}
        async with self.session.post(self.url(path), json=body, headers=headers) as response:
            payload = await response.json()
            if response.status != expect:
                raise RuntimeError(f"POST {path} -> {response.status}: {payload}")
            return payload

    async def submit(self, bodies: Sequence[bytes], concurrency: int) -> int:
        pending = iter(bodies)

        async def kiosk() -> None:
            for raw in pending:
                job = json.loads(raw)
                reply = await self.call("/v1/jobs", KIOSK_TOKEN, job, expect=201)
                self.printer_of[reply["job_id"]] = reply["printer_id"]

        await asyncio.gather(*(kiosk() for _ in range(concurrency)))
        return len(bodies)

    async def heartbeat(self, printer_id: str) -> int:
        body = {"agent_id": f"bench-{printer_id}", "version": "bench",
                "health": {"reachable": True}}  # fmt: skip
        reply = await self.call(f"/v1/agents/{printer_id}/heartbeat", agent_token(printer_id), body)
        self.heartbeat_interval_s = float(reply["heartbeat_interval_s"])
        return 1

    async def keep_heartbeating(self, printer_id: str) -> int:
        while True:
            await asyncio.sleep(self.heartbeat_interval_s)
            await self.heartbeat(printer_id)

    async def pause(self, seconds: float) -> int:
        await asyncio.sleep(seconds)
        return 0

    async def lease(self, printer_id: str, wait_s: float = 0, max_jobs: int = 1) -> list[str]:
        path = f"/v1/agents/{printer_id}/lease?wait={wait_s}&max={max_jobs}"
        reply = await self.call(path, agent_token(printer_id), None)
        for job in reply["jobs"]:
            self.leases[job["job_id"]] = job["lease_id"]
        return [job["job_id"] for job in reply["jobs"]]

    async def lease_all(self, printer_id: str, job_ids: Sequence[str]) -> int:
        """Lease until every one of `job_ids` on this printer is leased (no empty poll)."""
        wanted = {j for j in job_ids if self.printer_of[j] == printer_id}
        calls = 0
        while wanted:
            calls += 1
            got = await self.lease(printer_id, 0, self.args.lease_max)
            if not got:
                raise RuntimeError(f"{printer_id}: queue empty with {len(wanted)} jobs unleased")
            wanted.difference_update(got)
        return calls

    async def start(self, job_id: str) -> int:
        printer_id = self.printer_of[job_id]
        body = {"lease_id": self.leases[job_id]}
        await self.call(f"/v1/agents/{printer_id}/jobs/{job_id}/start", agent_token(printer_id),
                        body)  # fmt: skip
        return 1

    async def ack(self, job_id: str) -> int:
        printer_id = self.printer_of[job_id]
        body = {"lease_id": self.leases[job_id], "result": "printed"}
        await self.call(f"/v1/agents/{printer_id}/jobs/{job_id}/ack", agent_token(printer_id),
                        body)  # fmt: skip
        return 1

    async def per_printer(self, action: Callable[[str], Awaitable[int]]) -> int:
        """Each agent works its own printer; the agents run side by side."""
        counts = await asyncio.gather(*(action(p) for p in self.args.printer_ids))
        return sum(counts)

    async def per_job(self, job_ids: Sequence[str], action: Callable[[str], Awaitable[int]]) -> int:
        async def agent(printer_id: str) -> int:
            mine = [j for j in job_ids if self.printer_of[j] == printer_id]
            return sum([await action(job_id) for job_id in mine])

        return await self.per_printer(agent)

    # ---- scenarios

    async def backlog(self, tag: str, jobs: int, measured: bool) -> list[str]:
        bodies = job_bodies(jobs, self.args.printer_ids, tag)
        before = set(self.printer_of)

        def new_ids() -> list[str]:
            return [j for j in self.printer_of if j not in before]

        steps: list[tuple[str, Action]] = [
            ("accept", lambda: self.submit(bodies, self.args.kiosks)),
            ("lease", lambda: self.per_printer(lambda p: self.lease_all(p, new_ids()))),
            ("start", lambda: self.per_job(new_ids(), self.start)),
            ("ack printed", lambda: self.per_job(new_ids(), self.ack)),
        ]

        for name, action in steps:
            if measured:
                await self.measure(name, jobs, action)
            else:
                await action()
        return new_ids()

    async def one_idle_printer_job(self, tag: str) -> int:
        """The agent is long-polling an empty queue when the kiosk submits."""
        printer_id = self.args.printer_ids[0]
        lease_calls = self.monitor.script_calls["lease"]
        poll = asyncio.create_task(self.lease(printer_id, wait_s=10, max_jobs=1))
        # Submit only once the poll has run its first (empty) lease and waits.
        while self.monitor.script_calls["lease"] == lease_calls and not poll.done():
            await asyncio.sleep(0.001)
        [body] = job_bodies(1, [printer_id], tag)
        reply = await self.call("/v1/jobs", KIOSK_TOKEN, json.loads(body), expect=201)
        job_id = reply["job_id"]
        self.printer_of[job_id] = printer_id
        leased = await poll
        if leased != [job_id]:
            raise RuntimeError(f"long-poll returned {leased}, expected [{job_id}]")
        await self.start(job_id)
        await self.ack(job_id)
        return 4

    async def idle_printer(self, tag: str, jobs: int) -> int:
        calls = 0
        for number in range(jobs):
            calls += await self.one_idle_printer_job(f"{tag}-{number}")
        return calls

    async def states(self) -> Counter[str]:
        headers = {"Authorization": f"Bearer {KIOSK_TOKEN}"}
        found: Counter[str] = Counter()
        for job_id in self.printer_of:
            async with self.session.get(self.url(f"/v1/jobs/{job_id}"), headers=headers) as r:
                found[(await r.json())["state"]] += 1
        return found


# --------------------------------------------------------------------------- report


def per_job(count: float, jobs: int) -> str:
    """count / jobs, formatted."""
    return f"{count / jobs:7.2f}" if jobs else "      -"


def describe(trips: Sequence[RoundTrip]) -> str:
    counts = Counter(t.label for t in trips)
    return ", ".join(f"{label} x{n}" for label, n in counts.most_common()) or "none"


def print_phase_table(title: str, phases: Sequence[Phase], per: str = "job") -> None:
    print(f"\n{title}")
    print(f"{'phase':<24} {'jobs':>5} {'HTTP':>5} {'round trips':>11} {'in scripts':>10}"
          f" {'total':>7}   per {per}: round trips, total   what the coordinator sent")  # fmt: skip
    trips_sum = total_sum = 0
    jobs = max(p.jobs for p in phases)
    for p in phases:
        trips = len(p.job_trips)
        inner = p.job_total - trips
        trips_sum += trips
        total_sum += p.job_total
        print(f"{p.name:<24} {p.jobs:>5} {p.http_calls:>5} {trips:>11} {inner:>10} {p.job_total:>7}"
              f"   {per_job(trips, p.jobs)} {per_job(p.job_total, p.jobs)}"
              f"      {describe(p.job_trips)}")  # fmt: skip
    if len(phases) > 1:
        inner = total_sum - trips_sum
        print(f"{'whole lifecycle':<24} {jobs:>5} {'':>5} {trips_sum:>11} {inner:>10}"
              f" {total_sum:>7}   {per_job(trips_sum, jobs)} {per_job(total_sum, jobs)}"
              f"      round trips per job: target <= 6")  # fmt: skip


def print_idle(phase: Phase, printers: int) -> None:
    seconds = phase.wall_s
    print(f"\nidle coordinator for {seconds:.1f} s, {printers} agents heartbeating: per second")
    for kind in ("upkeep", "heartbeat", "job"):
        trips = phase.of_kind(kind)
        total = sum(t.commands for t in trips)
        print(f"  {kind:<10} {len(trips) / seconds:7.1f} round trips/s {total / seconds:8.1f}"
              f" commands/s   {describe(trips)}")  # fmt: skip


def print_breakdown(phases: Sequence[Phase]) -> None:
    print(
        "\nINFO commandstats per job, by command (in scripts and out; heartbeats, upkeep included)"
    )
    for p in phases:
        calls = ", ".join(f"{cmd} {n / p.jobs:.2f}" for cmd, n in p.stats.most_common())
        print(f"  {p.name:<24} {calls}")


def print_checks(phases: Sequence[Phase]) -> None:
    print("\ncross-checks")
    for p in phases:
        agree = "agree" if p.commandstats_total == p.monitor_total else "DISAGREE"
        other = sum(t.commands for t in p.other_trips)
        print(f"  {p.name:<24} {p.wall_s * 1000:5.0f} ms: commandstats {p.commandstats_total:>5},"
              f" MONITOR {p.monitor_total:>5} ({agree}); counted apart: {other} commands from"
              f" {describe(p.other_trips)}")  # fmt: skip
    leaked = {t.label for p in phases for t in p.trips if t.label.lower() in BENCH_COMMANDS}
    if leaked:
        print(f"  note: the coordinator itself sent {sorted(leaked)}: left out above")


# --------------------------------------------------------------------------- main


async def client_address(client: Redis) -> str:
    info = await client.client_info()
    return str(info["addr"])


async def drive(args: argparse.Namespace, redis: EmbeddedRedis, coordinator: Coordinator) -> None:
    monitor = Monitor(redis.port, script_names())
    stats = Redis.from_url(redis.url)  # used one call at a time: one pooled connection
    await monitor.start()
    try:
        async with aiohttp.ClientSession() as session:
            source = await client_address(stats)
            bench = Bench(args, coordinator, stats, source, monitor, session)
            await report(bench, args)
    finally:
        await stats.aclose()
        await monitor.stop()


async def report(bench: Bench, args: argparse.Namespace) -> None:
    tag = secrets.token_hex(3)
    # Warm-up, not counted: fills the coordinator's connection pool and loads scripts.
    await bench.per_printer(bench.heartbeat)
    await bench.backlog(f"{tag}-warm", 4 * args.kiosks, measured=False)
    beats = await bench.measure(
        "heartbeat", len(args.printer_ids), lambda: bench.per_printer(bench.heartbeat),
        work=frozenset({"heartbeat"}),
    )  # fmt: skip
    # From here on the agents heartbeat on their own, as real agents do.
    heartbeats = asyncio.create_task(bench.per_printer(bench.keep_heartbeating))
    try:
        await bench.backlog(f"{tag}-backlog", args.jobs, measured=True)
        backlog = bench.phases[-4:]
        idle = await bench.measure(
            "idle printer: whole job", args.long_poll_jobs,
            lambda: bench.idle_printer(f"{tag}-idle", args.long_poll_jobs),
        )  # fmt: skip
        quiet = await bench.measure("idle coordinator", 0, lambda: bench.pause(args.idle_s))
    finally:
        heartbeats.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await heartbeats
    print_phase_table(
        f"scenario 1, backlog: {args.jobs} jobs over {len(args.printer_ids)} printers, "
        f"{args.kiosks} kiosks submitting at once, lease wait=0 max={args.lease_max}",
        backlog,
    )
    print_phase_table(
        f"scenario 2, idle printer: {args.long_poll_jobs} jobs one at a time; the agent "
        "long-polls (wait=10) before the kiosk submits",
        [idle],
    )
    print_phase_table("per agent heartbeat (periodic, not per job)", [beats], per="beat")
    print_idle(quiet, len(args.printer_ids))
    print_breakdown([*backlog, idle])
    print_checks([beats, *backlog, idle, quiet])
    states = await bench.states()
    print(f"\njob states afterwards (warm-up included): {dict(states)}")


async def run(args: argparse.Namespace, work_dir: Path) -> None:
    redis = EmbeddedRedis(work_dir / "redis", appendfsync=args.fsync)
    coordinator: Coordinator | None = None
    try:
        await asyncio.to_thread(redis.start)
        coordinator = Coordinator(work_dir, redis.url, args.printer_ids)
        print("bench_lifecycle_commands: Redis commands per job, accept -> lease -> start -> ack")
        print(f"code: {git_revision()}")
        print("command: " + shlex.join(
            [".venv/bin/python", "bench/bench_lifecycle_commands.py", *sys.argv[1:]]))  # fmt: skip
        print("coordinator: " + shlex.join(coordinator.command()))
        await coordinator.start()
        await asyncio.wait_for(drive(args, redis, coordinator), args.time_limit)
    finally:
        if coordinator is not None:
            coordinator.stop()
        await asyncio.to_thread(redis.stop)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--jobs", type=int, default=200, help="jobs in the backlog scenario")
    parser.add_argument("--printers", type=int, default=4, help="printers (one agent each)")
    parser.add_argument("--kiosks", type=int, default=10, help="kiosks submitting at once")
    parser.add_argument("--lease-max", type=int, default=1, help="jobs per lease call (max=)")
    parser.add_argument("--long-poll-jobs", type=int, default=50, help="jobs in scenario 2")
    parser.add_argument("--idle-s", type=float, default=3.0, help="idle window measured")
    parser.add_argument("--fsync", default="always", choices=["always", "everysec"])
    parser.add_argument("--time-limit", type=float, default=300, help="hard limit in seconds")
    args = parser.parse_args(argv)
    args.printer_ids = printer_ids(args.printers)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    work_dir = Path(tempfile.mkdtemp(prefix="badgeline-bench-lifecycle-"))
    try:
        asyncio.run(run(args, work_dir))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
