"""Accepted jobs/s and latency of POST /v1/jobs: the coordinator beside a bare handler.

    .venv/bin/python bench/bench_accept.py [--requests 5000] [--rounds 5] [--concurrency 50]
        [--fsync always,everysec] [--printers 16] [--paced-rate 500] [--time-limit 600]
        [--py-spy profile.svg [--profile coordinator|bare]]

One run starts one Redis (the shipped valkey-server via EmbeddedRedis, on 127.0.0.1)
and two server processes, measured as three targets:

- coordinator: the real one, `python -m badgeline.cli coordinator --config <toml>
  --redis-url <url> --port <p>`, with a kiosk token and a high-water mark far above
  what the run enqueues, the jobs spread over several printers so no job is shed;
- bare: a process of its own (this file, --serve-bare) whose aiohttp handler
  validates the same `PrintJob` model and makes one EVALSHA of a script that
  returns at once, through the coordinator's own Redis client (the reference the
  target is set against);
- bare+write: the same process and handler on another route, with a script that
  INCRs one key, so that the AOF fsync the coordinator's writes cost is paid here
  too (a reference row, not part of the target).

The load generator is this process: 50 kiosk clients (one aiohttp ClientSession,
keep-alive) POST distinct jobs, a fixed number per round. Rounds alternate between
the servers, for each appendfsync policy (set on the same Redis with CONFIG SET).
Reported: median over rounds of jobs/s, p50 and p99, the ratio to the bare
handler, and the server's CPU per job (steadier than jobs/s when other work
shares the machine; a round waits up to --quiet-wait s for the machine to go
quiet before it starts). With 50 clients that never pause, latency is mostly
queueing (p50 ~ 50 / jobs/s), so a second, paced series offers a fixed rate
(default 500 jobs/s, open loop) and reports the latency a job sees when the
server is not saturated. The machine has 2 cores shared by the load generator,
the server under test and Redis, so the CPU each used is printed beside the
figures.

A benchmark, not a test: it asserts nothing. Everything it starts is stopped and
its temporary directory removed at the end, also on Ctrl-C or the time limit.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import os
import platform
import secrets
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

# Run from a checkout without installing: make `badgeline` importable.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp
from aiohttp import web
from benchkit import (
    HOST,
    OPERATOR_TOKEN,
    PACED_LEAD_S,
    VENUE,
    Coordinator,
    cpu_seconds,
    git_revision,
    job_bodies,
    load_average,
    machine_busy_seconds,
    percentile,
    post_all,
    post_paced,
    printer_ids,
    spawn,
    stop_process,
    wait_until_serving,
)
from pydantic import ValidationError
from redis.asyncio import Redis
from stallscrape import Stalls, read_stalls

from badgeline.coordinator.store.embedded import EmbeddedRedis, free_port
from badgeline.coordinator.store.keys import VenueKeys
from badgeline.coordinator.store.pool import WaitingConnectionPool
from badgeline.coordinator.store.script_loader import LoadedScript
from badgeline.protocol.models import PrintJob

TARGETS = ("coordinator", "bare", "bare+write")
NOOP_SCRIPT = "return 1"
WRITE_SCRIPT = "return redis.call('INCR', KEYS[1])"


# --------------------------------------------------------------------------- bare server

BARE_SCRIPTS = web.AppKey("bare_scripts", dict)


async def _bare_submit(request: web.Request, script_name: str) -> web.Response:
    raw = await request.read()
    try:
        job = PrintJob.model_validate_json(raw)
    except ValidationError as error:
        return web.json_response({"code": "validation_failed", "message": str(error)}, status=422)
    script = request.app[BARE_SCRIPTS][script_name]
    await script(["{bench}:bare:counter"], [job.idempotency_key])
    body = {"job_id": "job_" + secrets.token_hex(8), "state": "queued",
            "printer_id": job.printer_target, "position": 0, "duplicate": False}  # fmt: skip
    return web.json_response(body, status=201)


async def bare_submit(request: web.Request) -> web.Response:
    return await _bare_submit(request, "noop")


async def bare_submit_write(request: web.Request) -> web.Response:
    return await _bare_submit(request, "write")


async def bare_healthz(request: web.Request) -> web.Response:
    return web.json_response({"ok": True})


async def serve_bare(port: int, redis_url: str) -> None:
    # The coordinator's own Redis client (script calls pipelined on one connection,
    # redis_lane.py): the reference pays no more per Redis call than the coordinator.
    redis = Redis.from_pool(WaitingConnectionPool.from_url(redis_url, timeout=5.0))
    app = web.Application()
    app[BARE_SCRIPTS] = {
        name: LoadedScript(name, 1, redis.register_script(source))
        for name, source in (("noop", NOOP_SCRIPT), ("write", WRITE_SCRIPT))
    }
    app.router.add_post("/v1/jobs", bare_submit)
    app.router.add_post("/v1/jobs-write", bare_submit_write)
    app.router.add_get("/healthz", bare_healthz)
    await serve_until_signalled(app, port, redis)


async def serve_until_signalled(app: web.Application, port: int, redis: Redis) -> None:
    """Serve `app` on HOST:`port` until SIGTERM or SIGINT, then close it and `redis`
    (the bare reference servers, here and in scale_bare.py)."""
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    await web.TCPSite(runner, HOST, port).start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()
        await redis.aclose()


@dataclass
class BareServer:
    work_dir: Path
    redis_url: str
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def command(self) -> list[str]:
        return [sys.executable, str(Path(__file__).resolve()), "--serve-bare",
                "--port", str(self.port), "--redis-url", self.redis_url]  # fmt: skip

    async def start(self) -> None:
        log = self.work_dir / "bare.log"
        self.process = spawn(self.command(), log)
        await wait_until_serving(self.base_url + "/healthz", self.process, log)

    def stop(self) -> None:
        stop_process(self.process)


# --------------------------------------------------------------------------- load


@dataclass
class RoundResult:
    target: str
    fsync: str
    rate: float  # offered jobs/s of a paced round; 0 = closed loop (as fast as answered)
    accepted: int
    statuses: Counter[int]
    wall_s: float
    latencies_ms: list[float]
    cpu_s: dict[str, float]
    stalls: str = ""  # the coordinator's GC pauses and loop lag during the round

    @property
    def jobs_per_s(self) -> float:
        return self.accepted / self.wall_s if self.wall_s else 0.0

    def percentile(self, q: float) -> float:
        return percentile(self.latencies_ms, q)

    def cpu_pct(self, name: str) -> float:
        return 100 * self.cpu_s[name] / self.wall_s if self.wall_s else 0.0

    @property
    def server_ms_per_job(self) -> float:
        """CPU the server spent per accepted job: unlike jobs/s, barely moved by contention."""
        return 1000 * self.cpu_s["server"] / self.accepted if self.accepted else float("nan")


@dataclass
class Bench:
    args: argparse.Namespace
    redis: EmbeddedRedis
    coordinator: Coordinator
    bare: BareServer
    deadline: float
    rounds_run: int = 0
    results: list[RoundResult] = field(default_factory=list)
    run_tag: str = field(default_factory=lambda: secrets.token_hex(3))
    quiet_waits: list[float] = field(default_factory=list)  # machine CPU% when rounds began
    timed_out: bool = False

    def url(self, target: str) -> str:
        if target == "coordinator":
            return self.coordinator.base_url + "/v1/jobs"
        return self.bare.base_url + ("/v1/jobs-write" if target == "bare+write" else "/v1/jobs")

    def server_pid(self, target: str) -> int:
        process = self.coordinator.process if target == "coordinator" else self.bare.process
        assert process is not None
        return process.pid

    def remaining_s(self) -> float:
        return self.deadline - time.monotonic()

    async def round(
        self, target: str, fsync: str, requests: int, rate: float = 0, quiet: bool = True
    ) -> RoundResult:
        self.rounds_run += 1
        tag = f"{self.run_tag}-{self.rounds_run}"
        if quiet:
            await self.wait_for_quiet()
        bodies = job_bodies(requests, self.args.printer_ids, tag)
        timeout = aiohttp.ClientTimeout(total=30)
        connector = aiohttp.TCPConnector(limit=self.args.concurrency)
        async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
            # Open the keep-alive connections before the clock starts.
            warm = job_bodies(self.args.concurrency, self.args.printer_ids, tag + "-w")
            await post_all(session, self.url(target), warm, self.args.concurrency)
            stalls_before = await self.stalls(session, target)
            pids = {"server": self.server_pid(target), "redis": self.redis_pid()}
            cpu_before = {name: cpu_seconds(pid) for name, pid in pids.items()}
            client_before = time.process_time()
            machine_before = machine_busy_seconds()
            started = time.perf_counter()
            if rate:
                statuses, latencies = await post_paced(
                    session, self.url(target), bodies, self.args.concurrency, rate
                )
            else:
                statuses, latencies = await post_all(
                    session, self.url(target), bodies, self.args.concurrency
                )
            wall = time.perf_counter() - started - (PACED_LEAD_S if rate else 0.0)
            cpu = {name: cpu_seconds(pid) - cpu_before[name] for name, pid in pids.items()}
            cpu["client"] = time.process_time() - client_before
            # Everything else on the machine (other test suites, the OS): the noise.
            cpu["others"] = max(0.0, machine_busy_seconds() - machine_before - sum(cpu.values()))
            stalls_after = await self.stalls(session, target)
        stalls = stalls_after.since(stalls_before) if stalls_after and stalls_before else ""
        return RoundResult(target, fsync, rate, statuses[201], statuses, wall, latencies, cpu,
                           stalls)  # fmt: skip

    async def stalls(self, session: aiohttp.ClientSession, target: str) -> Stalls | None:
        if target != "coordinator":
            return None
        return await read_stalls(session, self.coordinator.base_url, OPERATOR_TOKEN)

    async def wait_for_quiet(self) -> None:
        """Start a round when the rest of the machine is quiet, or after --quiet-wait s."""
        give_up = time.monotonic() + min(self.args.quiet_wait, max(self.remaining_s(), 0))
        while True:
            before = machine_busy_seconds()
            await asyncio.sleep(0.5)
            busy_pct = (machine_busy_seconds() - before) / 0.5 * 100
            if busy_pct <= self.args.quiet_below or time.monotonic() >= give_up:
                self.quiet_waits.append(busy_pct)
                return

    def redis_pid(self) -> int:
        assert self.redis.process is not None
        return self.redis.process.pid

    async def run_mode(self, fsync: str, admin: Redis) -> None:
        await admin.config_set("appendfsync", fsync)
        print(f"  appendfsync={fsync}: warm-up", flush=True)
        for target in self.args.targets:
            if await self.bounded(self.round(target, fsync, self.args.warmup, quiet=False)) is None:
                return
        await self.rounds(fsync, self.args.requests, 0)
        if self.args.paced_rate > 0:
            await self.rounds(fsync, self.args.paced_requests, self.args.paced_rate)

    async def bounded(self, work: Awaitable[RoundResult]) -> RoundResult | None:
        """The round, or None once the time limit is reached (the round is dropped)."""
        remaining = self.remaining_s()
        try:
            if remaining <= 0:
                raise TimeoutError
            return await asyncio.wait_for(work, remaining)
        except TimeoutError:
            if not self.timed_out:
                print("  time limit reached: the rest of the run is skipped", flush=True)
            self.timed_out = True
            if inspect.iscoroutine(work):
                work.close()
            return None

    async def rounds(self, fsync: str, requests: int, rate: float) -> None:
        load = f"paced {rate:.0f}/s" if rate else "closed loop"
        for number in range(self.args.paced_rounds if rate else self.args.rounds):
            order = list(self.args.targets)
            if number % 2:
                order.reverse()
            for target in order:
                result = await self.bounded(self.round(target, fsync, requests, rate))
                if result is None:
                    return
                self.results.append(result)
                print(f"  {load} round {number + 1} {target:<12} "
                      f"{result.jobs_per_s:8.0f} jobs/s  p50 {result.percentile(50):6.1f} ms"
                      f"  p99 {result.percentile(99):6.1f} ms  server CPU"
                      f" {result.server_ms_per_job:.3f} ms/job  others"
                      f" {result.cpu_pct('others'):4.0f}%", flush=True)  # fmt: skip
                if result.stalls:
                    print(f"      {result.stalls}", flush=True)


# --------------------------------------------------------------------------- report


def fmt_ms(value: float) -> str:
    return f"{value:7.1f}"


def summarize(results: list[RoundResult]) -> dict[str, float]:
    rates = [r.jobs_per_s for r in results]
    errors = sum(sum(n for s, n in r.statuses.items() if s != 201) for r in results)
    summary = {
        "rounds": len(results),
        "jobs_per_s": statistics.median(rates),
        "min": min(rates),
        "max": max(rates),
        "p50": statistics.median(r.percentile(50) for r in results),
        "p99": statistics.median(r.percentile(99) for r in results),
        "p99_max": max(r.percentile(99) for r in results),
        "errors": errors,
    }
    for name in ("server", "redis", "client", "others"):
        summary[name] = statistics.median(r.cpu_pct(name) for r in results)
    summary["cpu_ms"] = statistics.median(r.server_ms_per_job for r in results)
    return summary


def print_mode_table(
    fsync: str, results: list[RoundResult], targets: Sequence[str], rate: float, quiet: float
) -> None:
    results = [r for r in results if r.rate == rate and r.fsync == fsync]
    if not results:
        return
    if rate:
        print(f"\nappendfsync={fsync}, paced at {rate:.0f} jobs/s offered (open loop; latency from"
              " each job's due time): median over rounds")  # fmt: skip
    else:
        print(f"\nappendfsync={fsync}, closed loop (each client sends its next job when answered):"
              " median over rounds; jobs/s range = slowest..fastest round")  # fmt: skip
    print(
        f"{'server':<18} {'rounds':>6} {'jobs/s':>8} {'range':>13} {'p50 ms':>7} {'p99 ms':>7}"
        f" {'p99 max':>7} {'non-201':>7} {'CPU% server':>11} {'redis':>6} {'client':>6}"
        f" {'others':>6} {'server CPU ms/job':>17}"
    )
    calm = [r for r in results if r.cpu_pct("others") <= quiet]
    everything = print_rows(results, targets, "")
    calmest = print_rows(calm, targets, " quiet")
    if calm:
        print(f"  (a quiet row keeps only the rounds in which everything else on the machine used"
              f" at most {quiet:.0f}% of a core)")  # fmt: skip
    else:
        print(f"  (no quiet row: in every round the rest of the machine used more than {quiet:.0f}%"
              " of a core, so these figures are mostly the noise's)")  # fmt: skip
    if not rate:
        print_ratios(everything, "all rounds")
        print_ratios(calmest, "quiet rounds")
        ratio_rounds = paired_ratios(results, fsync)
        if ratio_rounds:
            print(
                "  per-round ratios (coordinator / bare of the same round): "
                + " ".join(f"{x:.2f}" for x in ratio_rounds)
            )


def print_rows(
    results: list[RoundResult], targets: Sequence[str], suffix: str
) -> dict[str, dict[str, float]]:
    summaries = {}
    for target in targets:
        mine = [r for r in results if r.target == target]
        if not mine:
            continue
        s = summaries[target] = summarize(mine)
        span = f"{s['min']:.0f}..{s['max']:.0f}"
        print(f"{target + suffix:<18} {s['rounds']:>6.0f} {s['jobs_per_s']:>8.0f} {span:>13} "
              f"{fmt_ms(s['p50'])} {fmt_ms(s['p99'])} {fmt_ms(s['p99_max'])} {s['errors']:>7.0f}"
              f" {s['server']:>10.0f}% {s['redis']:>5.0f}% {s['client']:>5.0f}%"
              f" {s['others']:>5.0f}% {s['cpu_ms']:>17.3f}")  # fmt: skip
    return summaries


def print_ratios(summaries: dict[str, dict[str, float]], which: str) -> None:
    if "coordinator" not in summaries or "bare" not in summaries:
        return
    coordinator, bare = summaries["coordinator"], summaries["bare"]
    ratio = coordinator["jobs_per_s"] / bare["jobs_per_s"]
    cost_ratio = bare["cpu_ms"] / coordinator["cpu_ms"]
    print(f"{which}: coordinator / bare = {ratio:.2f}x jobs/s (target >= 0.65x), {cost_ratio:.2f}x"
          f" by CPU per job (the jobs/s ratio if each had a core to itself); coordinator p99"
          f" {coordinator['p99']:.1f} ms (target <= 25 ms)")  # fmt: skip


def paired_ratios(results: list[RoundResult], fsync: str) -> list[float]:
    coordinator = [r for r in results if r.target == "coordinator" and r.fsync == fsync]
    bare = [r for r in results if r.target == "bare" and r.fsync == fsync]
    coordinator, bare = [r for r in coordinator if not r.rate], [r for r in bare if not r.rate]
    return [c.jobs_per_s / b.jobs_per_s for c, b in zip(coordinator, bare, strict=False)]


def print_header(args: argparse.Namespace, command: list[str]) -> None:
    print("bench_accept: POST /v1/jobs, coordinator vs bare aiohttp handler")
    print(f"code: {git_revision()}")
    print("command: " + shlex.join([".venv/bin/python", "bench/bench_accept.py", *sys.argv[1:]]))
    print(f"machine: {os.cpu_count()} cores shared by the load generator (this process), "
          f"the server under test and Redis; load average {load_average()}")  # fmt: skip
    print(f"python {platform.python_version()}, aiohttp {aiohttp.__version__}, pid {os.getpid()}")
    print("CPU% columns: share of one core used during the timed part of a round by the server"
          " under test, Redis, this load generator, and everything else on the machine (other"
          " test suites: noise); 2 cores = 200%")  # fmt: skip
    print(f"load: {args.concurrency} kiosk clients (one ClientSession, keep-alive), "
          f"{args.requests} distinct jobs per round over {len(args.printer_ids)} printers, "
          f"{args.rounds} rounds per server per fsync policy after a {args.warmup}-job warm-up,"
          f" servers alternating; all on {HOST}")  # fmt: skip
    if args.paced_rate > 0:
        print(
            f"then {args.paced_rounds} paced rounds per server of {args.paced_requests} jobs "
            f"offered at {args.paced_rate:.0f} jobs/s by the same {args.concurrency} clients"
        )
    print("coordinator: " + shlex.join(command))


def print_quiet_waits(bench: Bench) -> None:
    waits, args = bench.quiet_waits, bench.args
    if not waits:
        return
    noisy = sum(1 for w in waits if w > args.quiet_below)
    print(f"machine CPU% in the 0.5 s before each round: median {statistics.median(waits):.0f}%, "
          f"max {max(waits):.0f}%; {noisy} of {len(waits)} rounds started without a quiet moment"
          f" (over {args.quiet_below:.0f}% after waiting {args.quiet_wait:.0f} s)")  # fmt: skip


async def print_redis_facts(admin: Redis, bench: Bench) -> None:
    server = await admin.info("server")
    persistence = await admin.info("persistence")
    version = server.get("valkey_version", server.get("redis_version"))
    print(
        f"\nredis: valkey {version} (EmbeddedRedis, AOF on; automatic AOF rewrite turned off for"
        f" the run), pid {bench.redis_pid()}; AOF rewrites: {persistence.get('aof_rewrites', '?')}"
    )
    queued = 0
    for printer_id in bench.args.printer_ids:
        queued += await admin.zcard(VenueKeys(VENUE).queue(printer_id))
    print(f"jobs the coordinator queued in Redis (incl. warm-ups): {queued}")
    print(f"coordinator log, events above info: {unusual_events(bench.coordinator.log_path)}")


def unusual_events(log: Path) -> str:
    """Warnings and errors the coordinator logged: a failover or shed would skew the run."""
    found: Counter[str] = Counter()
    for line in log.read_text(errors="replace").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            found["(not JSON)"] += 1
            continue
        if record.get("level") not in ("info", "debug"):
            found[str(record.get("event", record.get("message", "?")))] += 1
    return ", ".join(f"{name} x{n}" for name, n in found.most_common()) or "none"


# --------------------------------------------------------------------------- main


async def run(args: argparse.Namespace, work_dir: Path) -> None:
    redis = EmbeddedRedis(work_dir / "redis", appendfsync=args.fsync[0])
    bench: Bench | None = None
    coordinator: Coordinator | None = None
    bare: BareServer | None = None
    profiler: subprocess.Popen[bytes] | None = None
    try:
        await asyncio.to_thread(redis.start)
        coordinator = Coordinator(work_dir, redis.url, args.printer_ids)
        bare = BareServer(work_dir, redis.url)
        print_header(args, coordinator.command())
        await coordinator.start()
        await bare.start()
        if args.py_spy:
            profiled = coordinator if args.profile == "coordinator" else bare
            assert profiled.process is not None
            profiler = start_profiler(args.py_spy, profiled.process.pid, work_dir)
        bench = Bench(args, redis, coordinator, bare, time.monotonic() + args.time_limit)
        admin = Redis.from_url(redis.url)
        # An AOF rewrite (a fork) in the middle of one round would make it incomparable.
        await admin.config_set("auto-aof-rewrite-percentage", 0)
        try:
            for fsync in args.fsync:
                if not bench.timed_out:
                    await bench.run_mode(fsync, admin)
            for fsync in args.fsync:
                for rate in sorted({0.0, args.paced_rate}):
                    print_mode_table(fsync, bench.results, args.targets, rate, args.quiet_below)
            await print_redis_facts(admin, bench)
        finally:
            await admin.aclose()
        print(f"load average at the end: {load_average()}")
        print_quiet_waits(bench)
    finally:
        stop_profiler(profiler, args.py_spy)
        for server in (coordinator, bare):
            if server is not None:
                server.stop()
        await asyncio.to_thread(redis.stop)


def start_profiler(out: Path, pid: int, work_dir: Path) -> subprocess.Popen[bytes]:
    """py-spy sampling one server process for the whole run (it costs some CPU)."""
    formats = {".svg": "flamegraph", ".json": "speedscope"}
    command = [str(Path(sys.executable).parent / "py-spy"), "record",
               "--rate", "100", "--format", formats.get(out.suffix, "raw"), "--output",
               str(out.resolve()), "--pid", str(pid)]  # fmt: skip
    print("profiler: " + shlex.join(command), flush=True)
    return spawn(command, work_dir / "py-spy.log")


def stop_profiler(profiler: subprocess.Popen[bytes] | None, out: Path | None) -> None:
    if profiler is None or profiler.poll() is not None:
        return
    profiler.send_signal(signal.SIGINT)  # py-spy writes its output on SIGINT
    try:
        profiler.wait(30)
    except subprocess.TimeoutExpired:
        profiler.kill()
        profiler.wait()
    print(f"profile written to {out}")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--requests", type=int, default=5000, help="timed jobs per round")
    parser.add_argument("--rounds", type=int, default=5, help="rounds per server and policy")
    parser.add_argument("--warmup", type=int, default=1000, help="untimed jobs per server first")
    parser.add_argument("--concurrency", type=int, default=50, help="concurrent kiosk clients")
    parser.add_argument("--printers", type=int, default=16, help="printer queues to spread over")
    parser.add_argument(
        "--fsync",
        default="always,everysec",
        help="appendfsync policies, comma-separated (first = start-up policy)",
    )
    parser.add_argument("--targets", default=",".join(TARGETS), help="servers to measure")
    parser.add_argument(
        "--paced-rate",
        type=float,
        default=500,
        help="also measure latency at this offered jobs/s (0 = skip)",
    )
    parser.add_argument("--paced-requests", type=int, default=2500, help="jobs per paced round")
    parser.add_argument("--paced-rounds", type=int, default=3, help="paced rounds per server")
    parser.add_argument(
        "--quiet-below",
        type=float,
        default=25,
        help="start a round once the machine uses less than this CPU%% (of one core) for 0.5 s...",
    )
    parser.add_argument(
        "--quiet-wait",
        type=float,
        default=5,
        help="...waiting at most this many seconds per round",
    )
    parser.add_argument("--time-limit", type=float, default=600, help="hard limit in seconds")
    parser.add_argument(
        "--py-spy",
        type=Path,
        metavar="OUT",
        help="profile a server (see --profile) with py-spy into OUT (.svg flamegraph, "
        ".json speedscope, else collapsed stacks); needs `pip install py-spy`",
    )
    parser.add_argument(
        "--profile",
        choices=["coordinator", "bare"],
        default="coordinator",
        help="the server --py-spy samples",
    )
    parser.add_argument("--serve-bare", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--redis-url", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.fsync = [p for p in args.fsync.split(",") if p]
    args.targets = [t for t in args.targets.split(",") if t]
    bad = [p for p in args.fsync if p not in ("always", "everysec", "no")]
    bad += [t for t in args.targets if t not in TARGETS]
    if bad:
        parser.error(f"unknown value(s): {', '.join(bad)}")
    args.printer_ids = printer_ids(args.printers)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.serve_bare:
        asyncio.run(serve_bare(args.port, args.redis_url))
        return 0
    work_dir = Path(tempfile.mkdtemp(prefix="badgeline-bench-accept-"))
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
