"""Redis memory and AOF size over a long event, with finished jobs leaving Redis.

    .venv/bin/python bench/bench_retention.py [--jobs 100000] [--rate 250]
        [--retention-s 60] [--dedupe-window-s 60] [--sample-s 10] [--tail-s 90]
        [--fsync always] [--aof-min-size MB]

A multi-day event in minutes: jobs go accept → lease → start → ack `printed`
through the coordinator's store (the same scripts the HTTP API runs, without
HTTP, for speed), paced at `--rate` jobs/s, on its own embedded Redis (as the
coordinator starts it, `appendfsync always` unless told). The retention sweep
(control/retention.py) runs every `--sweep-s` with `job_retention_s` and
`dedupe_window_s` shortened to the run's time scale, and writes the audit
export to the run's temporary directory. Every `--sample-s` a line gives the
jobs done, `used_memory` (INFO memory), the keys, the closed jobs still in
Redis, the AOF's size (INFO persistence `aof_current_size` and the files in
`appendonlydir`), the AOF rewrites so far and the export's size. After the last
job it samples `--tail-s` more, while the last jobs leave.

The summary compares the last third of the run's samples with the middle third
(the first third is the ramp-up: jobs wait out their retention): memory, keys
and AOF level off when the last third's mean is within 15 % of the middle
third's. The AOF rises and falls with each rewrite, so its peaks are printed too.

A benchmark, not a test: it asserts nothing. Its Redis is stopped and its
temporary directory removed at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import secrets
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

# Run from a checkout without installing: make `badgeline` and benchkit importable.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchkit import git_revision, load_average
from redis.asyncio import Redis

from badgeline.coordinator.config import CoordinatorSettings
from badgeline.coordinator.control.audit_export import AuditExport
from badgeline.coordinator.control.health import probe_verdict
from badgeline.coordinator.control.retention import RetentionSweeper
from badgeline.coordinator.store import Store
from badgeline.coordinator.store.connection import connected
from badgeline.coordinator.store.embedded import EmbeddedRedis
from badgeline.coordinator.store.jobs import Route
from badgeline.protocol.agent_models import AckRequest, HeartbeatRequest, PrinterHealthReport
from badgeline.protocol.job import PrintJob
from badgeline.protocol.states import AckResult

MB = 1024 * 1024


@dataclass
class Sample:
    t_s: float
    done: int
    used_memory: int
    keys: int
    closed: int
    aof_current: int
    aof_files: int
    aof_rewrites: int
    export_bytes: int

    def line(self) -> str:
        return (
            f"{self.t_s:7.0f} s  jobs {self.done:7,d}  used_memory {self.used_memory / MB:7.1f}"
            f" MB  keys {self.keys:7,d}  closed in Redis {self.closed:7,d}  AOF"
            f" {self.aof_current / MB:7.1f} MB (files {self.aof_files / MB:7.1f} MB,"
            f" rewrites {self.aof_rewrites})  export {self.export_bytes / MB:7.1f} MB"
        )


def _dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


async def sample(redis: Redis, store: Store, server: EmbeddedRedis, export: AuditExport,
                 t0: float, done: int) -> Sample:  # fmt: skip
    memory = await redis.info("memory")
    persistence = await redis.info("persistence")
    return Sample(
        t_s=time.monotonic() - t0, done=done, used_memory=int(memory["used_memory"]),
        keys=int(await redis.dbsize()), closed=await store.retention.closed_count(),
        aof_current=int(persistence["aof_current_size"]),
        aof_files=_dir_bytes(server.data_dir / "appendonlydir"),
        aof_rewrites=int(persistence["aof_rewrites"]),
        export_bytes=sum(p.stat().st_size for p in export.files()),
    )  # fmt: skip


async def one_job(store: Store, printer_id: str, n: int) -> None:
    job = PrintJob(attendee_id=f"att_{n:08x}", badge_pdf_ref="https://badges.example/a.pdf",
                   printer_target=printer_id, priority=100,
                   idempotency_key=f"scan-{secrets.token_hex(8)}")  # fmt: skip
    await store.jobs.accept(job, route=Route(printer_id), correlation_id=f"bench-{n}",
                            actor="kiosk:bench")  # fmt: skip
    for leased in (await store.leases.lease(printer_id, 1, f"agent:{printer_id}")).jobs:
        await store.leases.grant_start(printer_id, leased.job_id, leased.lease_id, "agent")
        ack = AckRequest(lease_id=leased.lease_id, result=AckResult.PRINTED)
        await store.leases.ack(printer_id, leased.job_id, ack, f"agent:{printer_id}")


async def drive(store: Store, args: argparse.Namespace, printers: list[str],
                counter: list[int]) -> None:  # fmt: skip
    """`args.jobs` jobs at `args.rate` jobs/s, by `args.workers` concurrent desks. A
    schedule more than a second behind (a busy machine) moves on instead of catching
    up in a burst, so the rate is the rate."""
    start = [time.monotonic()]
    next_n = iter(range(args.jobs))

    async def desk(index: int) -> None:
        for n in next_n:
            if args.rate:
                due = start[0] + n / args.rate
                now = time.monotonic()
                if now - due > 1.0:
                    start[0] += now - due - 1.0
                elif due > now:
                    await asyncio.sleep(due - now)
            await one_job(store, printers[index % len(printers)], n)
            counter[0] += 1

    await asyncio.gather(*(desk(i) for i in range(args.workers)))


async def sweep_loop(sweeper: RetentionSweeper, every_s: float, stop: asyncio.Event) -> None:
    while not stop.is_set():
        await sweeper.sweep_once()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every_s)


def _peak(samples: list[Sample], attr: str) -> float:
    return max(getattr(s, attr) for s in samples)


def _mean(samples: list[Sample], attr: str) -> float:
    return sum(getattr(s, attr) for s in samples) / len(samples)


def summary(samples: list[Sample], during: int) -> list[str]:
    """Middle and last thirds of the run (the first is the ramp-up): the AOF is a saw
    (it grows, then a rewrite shrinks it), so the verdict compares the thirds' means."""
    run = samples[:during]
    third = len(run) // 3
    middle, last = (run[third : 2 * third], run[2 * third :]) if third else (run, run)
    lines = []
    for attr, name, scale, unit in (("used_memory", "used_memory", MB, " MB"),
                                    ("aof_current", "AOF", MB, " MB"),
                                    ("keys", "keys", 1, "")):  # fmt: skip
        m, last_mean = _mean(middle, attr), _mean(last, attr)
        ratio = last_mean / m if m else float("inf")
        verdict = "levels off" if ratio <= 1.15 else "still growing"
        lines.append(
            f"{name}: peak {_peak(run, attr) / scale:,.1f}{unit}; mean of the middle third"
            f" {m / scale:,.1f}{unit}, of the last third {last_mean / scale:,.1f}{unit}"
            f" ({ratio:.2f}x: {verdict}); peak of the last third"
            f" {_peak(last, attr) / scale:,.1f}{unit}; after the tail"
            f" {getattr(samples[-1], attr) / scale:,.1f}{unit}"
        )
    return lines


async def main(args: argparse.Namespace) -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-retention-"))
    extra = ["--auto-aof-rewrite-min-size", f"{args.aof_min_size}mb"] if args.aof_min_size else []
    server = EmbeddedRedis(work / "redis", appendfsync=args.fsync, extra_args=extra)
    try:
        server.start()
        # model_copy, not validation: the run's windows are below what a venue may set.
        settings = CoordinatorSettings(
            venue="bench", redis_url=server.url, state_dir=work, mdns=False, high_water_mark=100_000
        ).model_copy(
            update={"job_retention_s": args.retention_s, "dedupe_window_s": args.dedupe_window_s}
        )
        printers = [f"printer-bench{n:02d}" for n in range(args.printers)]
        async with connected(settings, server.url) as client:
            store, redis = Store(client, settings), Redis.from_url(server.url)
            export = AuditExport(settings.audit_directory, settings.audit_file_max_bytes)
            report = PrinterHealthReport(reachable=True)
            for printer_id in printers:
                beat = HeartbeatRequest(agent_id=f"pi-{printer_id}", version="bench",
                                        health=report)  # fmt: skip
                await store.printers.heartbeat(printer_id, beat, probe_verdict(report))
            rewrite = await redis.config_get("auto-aof-rewrite-*")
            print(f"# commit {git_revision()}  load {load_average()}  jobs {args.jobs:,d}  rate"
                  f" {args.rate:g} jobs/s  retention {args.retention_s} s  dedupe window"
                  f" {args.dedupe_window_s} s  appendfsync {args.fsync}  {rewrite}")  # fmt: skip
            stop, counter = asyncio.Event(), [0]
            sweeper = RetentionSweeper(store, export)
            sweeping = asyncio.create_task(sweep_loop(sweeper, args.sweep_s, stop))
            t0 = time.monotonic()
            driving = asyncio.create_task(drive(store, args, printers, counter))
            samples: list[Sample] = []
            while not driving.done():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(driving), args.sample_s)
                samples.append(await sample(redis, store, server, export, t0, counter[0]))
                print(samples[-1].line(), flush=True)
            await driving
            during = len(samples)
            tail_end = time.monotonic() + args.tail_s
            while time.monotonic() < tail_end:
                await asyncio.sleep(args.sample_s)
                samples.append(await sample(redis, store, server, export, t0, counter[0]))
                print(samples[-1].line(), flush=True)
            stop.set()
            await sweeping
            exported = sum(1 for _ in export.records())
            print("\n".join(["", *summary(samples, during)]))
            print(
                f"jobs {counter[0]:,d} in {samples[during - 1].t_s:.0f} s; exported {exported:,d};"
                f" per job in the export {samples[-1].export_bytes / max(1, exported):,.0f} B"
            )
            await redis.aclose()
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--rate", type=float, default=250.0, help="jobs/s; 0: as fast as it goes")
    parser.add_argument("--workers", type=int, default=32, help="jobs in flight at once")
    parser.add_argument("--printers", type=int, default=8)
    parser.add_argument("--retention-s", type=int, default=60)
    parser.add_argument("--dedupe-window-s", type=int, default=60)
    parser.add_argument("--sweep-s", type=float, default=5.0)
    parser.add_argument("--sample-s", type=float, default=10.0)
    parser.add_argument("--tail-s", type=float, default=90.0)
    parser.add_argument("--fsync", choices=("always", "everysec"), default="always")
    parser.add_argument("--aof-min-size", type=int, default=0, metavar="MB",
                        help="auto-aof-rewrite-min-size; 0: the server's default")  # fmt: skip
    return parser.parse_args()


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
