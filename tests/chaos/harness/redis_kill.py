"""Durability of the accept path: the Redis server SIGKILLed under accept load.

`redis_kill_round`: one coordinator on a Redis server the harness owns; kiosks
submit as fast as they can; the Redis server is SIGKILLed mid-load and started
again from its AOF; every job a kiosk was answered 201/200 for must be there
afterwards, with its idempotency key still claimed. The same round measures
accept throughput, so `always` and `everysec` can be compared in one run.

SIGKILL ends the process, not the machine: written pages stay in the kernel's
cache. This proves that a reported commit was a commit; surviving real power
loss rests on fsync (Redis appendfsync always), which `fsync_calls` makes
visible. The agent's half is power_cuts.py.
"""

from __future__ import annotations

import asyncio
import collections
import random
import re
import shutil
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import redis.asyncio as aredis

from tests.chaos.harness.run import fetch_jobs
from tests.chaos.harness.venue import ChaosVenue

ACCEPT_PRINTERS = ("printer-a", "printer-b", "printer-c")  # targets only: no agents run
JOB_KEY = re.compile(r"^bl:\{[^}]+\}:job:job_[0-9a-f]{16}$")


@dataclass
class Answer:
    sent: float
    answered: float
    status: int | None  # None: no answer (connection error, timeout)
    job_id: str | None
    body: dict[str, Any]


@dataclass
class AcceptRound:
    appendfsync: str
    concurrency: int
    measured_s: float
    answers: list[Answer] = field(default_factory=list)
    killed_at: float = 0.0
    restarted_at: float = 0.0
    lost: list[str] = field(default_factory=list)  # acknowledged, then missing or changed
    key_lost: list[str] = field(default_factory=list)  # resubmitted: not the same job
    present_after_restart: int = 0  # job hashes in Redis after the restart
    fsync_calls: int | None = None  # Redis fsync/fdatasync calls while measuring (strace)
    fsync_window_jobs: int = 0

    @property
    def acknowledged(self) -> dict[str, Answer]:
        return {a.job_id: a for a in self.answers if a.status in (200, 201) and a.job_id}

    def window(self, start: float, end: float) -> list[Answer]:
        return [a for a in self.answers if a.status == 201 and start <= a.answered < end]

    def figures(self, measure_from: float, measure_to: float) -> dict[str, Any]:
        measured = self.window(measure_from, measure_to)
        latencies = sorted((a.answered - a.sent) * 1000 for a in measured)
        outage = [a for a in self.answers if self.killed_at <= a.sent < self.restarted_at]
        return {
            "appendfsync": self.appendfsync,
            "concurrency": self.concurrency,
            "jobs_per_s": round(len(measured) / (measure_to - measure_from), 1),
            "p50_ms": round(statistics.median(latencies), 1) if latencies else None,
            "p99_ms": round(latencies[int(0.99 * (len(latencies) - 1))], 1) if latencies else None,
            "acknowledged": len(self.acknowledged),
            "present_after_restart": self.present_after_restart,
            "lost": len(self.lost),
            "keys_no_longer_claimed": len(self.key_lost),
            "answers_during_outage": dict(collections.Counter(str(a.status) for a in outage)),
            "fsync_calls_per_accepted_job": (
                round(self.fsync_calls / self.fsync_window_jobs, 2)
                if self.fsync_calls is not None and self.fsync_window_jobs else None
            ),
        }  # fmt: skip


class AcceptLoad:
    """`concurrency` kiosks, each submitting a new job as soon as it has an answer."""

    def __init__(self, venue: ChaosVenue, concurrency: int, tag: str) -> None:
        self.venue = venue
        self.concurrency = concurrency
        self.tag = tag
        self.answers: list[Answer] = []
        self.stop = asyncio.Event()
        self._numbers = iter(range(10**9))

    async def run(self) -> None:
        await asyncio.gather(*(self._kiosk(n) for n in range(self.concurrency)))

    async def _kiosk(self, kiosk: int) -> None:
        url = self.venue.replicas[0].url + "/v1/jobs"
        headers = {"Authorization": f"Bearer {self.venue.kiosk_token}"}
        timeout = aiohttp.ClientTimeout(total=10)
        while not self.stop.is_set():
            n = next(self._numbers)
            body = {"attendee_id": f"att-{self.tag}-{n}",
                    "badge_pdf_ref": "https://badges.example/att.pdf",
                    "printer_target": ACCEPT_PRINTERS[n % len(ACCEPT_PRINTERS)],
                    "priority": 100, "idempotency_key": f"dur-{self.tag}-{n:08d}"}  # fmt: skip
            sent = time.monotonic()
            status, job_id = None, None
            try:
                async with self.venue.session.post(url, json=body, headers=headers,
                                                   timeout=timeout) as answer:  # fmt: skip
                    status = answer.status
                    if status in (200, 201):
                        job_id = (await answer.json())["job_id"]
            except (aiohttp.ClientError, TimeoutError, ValueError):
                status = None
            self.answers.append(Answer(sent, time.monotonic(), status, job_id, body))
            if status not in (200, 201):
                await asyncio.sleep(0.05)  # Redis is down: do not spin


async def redis_kill_round(
    root: Path,
    appendfsync: str,
    *,
    concurrency: int = 32,
    warmup_s: float = 2.0,
    measure_s: float = 8.0,
    outage_s: float = 1.0,
    after_s: float = 2.0,
    count_fsyncs: bool = False,
) -> tuple[AcceptRound, dict[str, Any]]:
    """Measure accepts, kill -9 Redis under that load, restart it, check every 201/200."""
    venue = ChaosVenue(root, (), coordinators=1, appendfsync=appendfsync,
                       coordinator_settings={"high_water_mark": 100_000,
                                             "known_printers": list(ACCEPT_PRINTERS),
                                             "log_level": "WARNING"})  # fmt: skip
    result = AcceptRound(appendfsync, concurrency, measure_s)
    await venue.start()
    try:
        load = AcceptLoad(venue, concurrency, f"{appendfsync}-{time.time_ns()}")
        running = asyncio.create_task(load.run())
        await asyncio.sleep(warmup_s)
        measure_from = time.monotonic()
        await asyncio.sleep(measure_s)
        measure_to = time.monotonic()
        if count_fsyncs:
            await _count_fsyncs(venue, load, result)
        result.killed_at = time.monotonic()
        await venue.kill_redis()
        await asyncio.sleep(outage_s)
        await venue.start_redis()
        result.restarted_at = time.monotonic()
        await venue.wait_for(lambda: venue.ok(venue.replicas[0].url + "/healthz"), "healthz")
        await asyncio.sleep(after_s)  # the load goes on against the restarted server
        load.stop.set()
        await running
        result.answers = load.answers
        await _verify_survivors(venue, result)
    finally:
        await venue.stop()
    return result, result.figures(measure_from, measure_to)


async def _count_fsyncs(venue: ChaosVenue, load: AcceptLoad, result: AcceptRound) -> None:
    """strace -c on the Redis server for two seconds: its fsync calls per accepted job."""
    if shutil.which("strace") is None or venue.redis.process is None:
        return
    out = venue.root / "strace-fsync.txt"
    tracer = await asyncio.create_subprocess_exec(
        "strace", "-f", "-c", "-e", "trace=fsync,fdatasync", "-o", str(out),
        "-p", str(venue.redis.process.pid),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    await asyncio.sleep(0.5)  # attached
    start = time.monotonic()
    await asyncio.sleep(2.0)
    end = time.monotonic()
    tracer.send_signal(2)  # SIGINT: strace detaches and writes its summary
    await asyncio.wait_for(tracer.wait(), 10)
    result.fsync_window_jobs = len([a for a in load.answers if a.status == 201
                                    and start <= a.answered < end])  # fmt: skip
    calls = 0
    for line in out.read_text().splitlines():
        parts = line.split()
        if parts and parts[-1] in ("fsync", "fdatasync"):
            calls += int(parts[3])  # % time, seconds, usecs/call, calls, [errors], syscall
    result.fsync_calls = calls


async def _verify_survivors(venue: ChaosVenue, result: AcceptRound) -> None:
    acknowledged = result.acknowledged
    views = await fetch_jobs(venue, sorted(acknowledged))
    for job_id, told in acknowledged.items():
        view = views.get(job_id)
        if view is None or view["idempotency_key"] != told.body["idempotency_key"]:
            result.lost.append(job_id)
    # one key, one job, across the restart: a repeat must name the same job
    sample = random.Random(len(acknowledged)).sample(sorted(acknowledged),
                                                     min(200, len(acknowledged)))  # fmt: skip
    headers = {"Authorization": f"Bearer {venue.kiosk_token}"}
    for job_id in sample:
        body = acknowledged[job_id].body
        async with venue.session.post(venue.replicas[0].url + "/v1/jobs", json=body,
                                      headers=headers) as answer:  # fmt: skip
            again = await answer.json()
            if answer.status != 200 or again.get("job_id") != job_id:
                result.key_lost.append(job_id)
    client = aredis.Redis.from_url(venue.redis.url)
    try:
        result.present_after_restart = sum(
            [1 async for key in client.scan_iter(match="bl:*:job:job_*", count=1000)
             if JOB_KEY.match(key.decode())]
        )  # fmt: skip
    finally:
        await client.aclose()
