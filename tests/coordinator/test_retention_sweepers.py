"""The retention sweep with several replicas: every job that leaves Redis is in the
audit export exactly once, whether sweepers race, one dies between its write and
the removal, or a crash tore the export's last line; the export is private; and
a stretch of an event levels off at no jobs in Redis."""

from __future__ import annotations

import asyncio
import secrets
import stat
from collections import Counter
from pathlib import Path

from redis.asyncio import Redis

from badgeline.coordinator.config import CoordinatorSettings
from badgeline.coordinator.control.audit_export import AuditExport
from badgeline.coordinator.control.health import probe_verdict
from badgeline.coordinator.control.retention import RetentionSweeper
from badgeline.coordinator.store import Store
from badgeline.coordinator.store.embedded import EmbeddedRedis
from badgeline.coordinator.store.jobs import Route
from badgeline.protocol.agent_models import AckRequest, HeartbeatRequest, PrinterHealthReport
from badgeline.protocol.job import PrintJob
from badgeline.protocol.states import AckResult
from tests.helpers import wait_for

PRINTERS = ("printer-a", "printer-b")


def _settings(settings: CoordinatorSettings) -> CoordinatorSettings:
    return settings.model_copy(update={"job_retention_s": 1, "high_water_mark": 10_000})


async def _print_jobs(store: Store, count: int, concurrency: int = 20) -> list[str]:
    """`count` jobs through accept, lease, start and a printed ack, as the API runs them."""
    report = PrinterHealthReport(reachable=True)
    for printer_id in PRINTERS:
        beat = HeartbeatRequest(agent_id=f"pi-{printer_id}", version="t", health=report)
        await store.printers.heartbeat(printer_id, beat, probe_verdict(report))
    printed: list[str] = []
    numbers = iter(range(count))

    async def desk(index: int) -> None:
        printer_id = PRINTERS[index % len(PRINTERS)]
        for n in numbers:
            job = PrintJob(attendee_id=f"att_{n:08x}", badge_pdf_ref="https://badges.example/a.pdf",
                           printer_target=printer_id, priority=100,
                           idempotency_key=f"scan-{secrets.token_hex(8)}")  # fmt: skip
            await store.jobs.accept(job, route=Route(printer_id), correlation_id="c",
                                    actor="kiosk:test")  # fmt: skip
            for leased in (await store.leases.lease(printer_id, 1, "agent")).jobs:
                await store.leases.grant_start(printer_id, leased.job_id, leased.lease_id, "a")
                ack = AckRequest(lease_id=leased.lease_id, result=AckResult.PRINTED)
                await store.leases.ack(printer_id, leased.job_id, ack, "agent")
                printed.append(leased.job_id)

    await asyncio.gather(*(desk(i) for i in range(concurrency)))
    return printed


async def _all_due(redis: Redis, store: Store, count: int) -> bool:
    """True once `count` closed jobs have been closed longer than their retention."""
    seconds, micros = await redis.time()
    cutoff_ms = seconds * 1000 + micros // 1000 - store.settings.job_retention_s * 1000
    return int(await redis.zcount(store.keys.closed, "-inf", cutoff_ms)) >= count


def _export_counts(export: AuditExport) -> Counter[str]:
    return Counter(record["job_id"] for record in export.records())


async def _jobs_in_redis(redis: Redis, store: Store) -> int:
    prefix = store.keys.job("")
    return sum([1 async for key in redis.scan_iter(match=prefix + "*", count=1000)
                if b":" not in key.removeprefix(prefix.encode())])  # fmt: skip


async def test_two_replicas_sweeping_at_once_export_each_job_once(
    redis_server: EmbeddedRedis, redis: Redis, settings: CoordinatorSettings
) -> None:
    # GIVEN 600 printed jobs past their retention, and two replicas, each with its
    # own Redis connection, sharing one audit directory
    tuned = _settings(settings)
    store = Store(redis, tuned)
    printed = await _print_jobs(store, 600)
    other = Redis.from_url(redis_server.url)
    try:
        export = AuditExport(tuned.audit_directory, tuned.audit_file_max_bytes)
        sweepers = [RetentionSweeper(Store(client, tuned), export) for client in (redis, other)]

        # WHEN both sweep over and over at once, until no job is left in Redis
        async def race() -> bool:
            await asyncio.gather(*(sweeper.sweep_once() for sweeper in sweepers))
            return await _jobs_in_redis(redis, store) == 0

        await wait_for(race, 30, interval_s=0)
    finally:
        await other.aclose()
    # THEN the export holds every job exactly once
    assert _export_counts(export) == Counter(printed)


async def test_a_replica_killed_between_its_write_and_the_removal_loses_and_doubles_nothing(
    redis: Redis, settings: CoordinatorSettings
) -> None:
    tuned = _settings(settings)
    store = Store(redis, tuned)
    printed = await _print_jobs(store, 300)
    export = AuditExport(tuned.audit_directory, tuned.audit_file_max_bytes)
    dying = RetentionSweeper(store, export, hold_s=0.5)
    # GIVEN a replica that claimed a batch and wrote it to the export, and one that
    # claimed a batch and wrote nothing; both died before removing their jobs
    await wait_for(lambda: _all_due(redis, store, len(printed)), 10, interval_s=0.1)
    written = await dying.claim(limit=100)
    assert len(written.jobs) == 100
    await dying.write(written)
    unwritten = await dying.claim(limit=100)
    assert len(unwritten.jobs) == 100
    # WHEN another replica sweeps: the jobs nobody holds leave at once, the held
    # ones stay while their claims hold, and leave once the claims have run out
    survivor = RetentionSweeper(store, export)
    await survivor.sweep_once()
    held = {job.job_id for job in written.jobs + unwritten.jobs}
    assert all([await redis.exists(store.keys.job(job_id)) for job_id in held])
    assert await _jobs_in_redis(redis, store) == len(held)

    async def all_gone() -> bool:
        await survivor.sweep_once()
        return await _jobs_in_redis(redis, store) == 0

    await wait_for(all_gone, 20, interval_s=0.1)
    # THEN every job is in the export exactly once: none written twice, none lost
    assert _export_counts(export) == Counter(printed)


async def test_a_line_torn_by_a_crash_is_skipped_and_the_next_batch_starts_clean(
    redis: Redis, settings: CoordinatorSettings
) -> None:
    tuned = _settings(settings)
    store = Store(redis, tuned)
    printed = await _print_jobs(store, 40)
    export = AuditExport(tuned.audit_directory, tuned.audit_file_max_bytes)
    sweeper = RetentionSweeper(store, export)
    await wait_for(lambda: _all_due(redis, store, len(printed)), 10, interval_s=0.1)
    first = await sweeper.claim(limit=20)
    assert len(first.jobs) == 20
    await sweeper.write(first)
    await sweeper.remove(first)
    # GIVEN a crash mid-write: half a record at the end of the export's file
    (path,) = export.files()
    with path.open("ab") as file:
        file.write(b'{"job_id":"job_ffffffffffffffff","format":1,"ven')
    # WHEN the next batch is written
    await wait_for(lambda: _swept_all(sweeper, redis, store), 10, interval_s=0.1)
    # THEN every whole record reads, each job once, and the torn one is no record
    assert _export_counts(export) == Counter(printed)
    assert export.find("job_ffffffffffffffff") is None
    assert export.find(printed[-1]) is not None


async def _swept_all(sweeper: RetentionSweeper, redis: Redis, store: Store) -> bool:
    await sweeper.sweep_once()
    return await _jobs_in_redis(redis, store) == 0


async def test_the_export_is_private_and_rotates_by_size(
    redis: Redis, settings: CoordinatorSettings
) -> None:
    # GIVEN files of at most 64 KiB (about 35 records)
    tuned = _settings(settings).model_copy(update={"audit_file_max_bytes": 64 * 1024})
    store = Store(redis, tuned)
    printed = await _print_jobs(store, 120)
    export = AuditExport(tuned.audit_directory, tuned.audit_file_max_bytes)
    sweeper = RetentionSweeper(store, export)

    # WHEN the jobs leave in batches of 10
    async def batches() -> bool:
        claim = await sweeper.claim(limit=10)
        await sweeper.write(claim)
        await sweeper.remove(claim)
        return await _jobs_in_redis(redis, store) == 0

    await wait_for(batches, 20, interval_s=0.1)
    # THEN they are spread over several files, none past the limit, numbered in order
    files = export.files()
    assert len(files) >= 3 and all(p.stat().st_size <= 64 * 1024 for p in files)
    assert [p.name.rsplit("-", 1)[1] for p in files] == [
        f"{n:03d}.jsonl" for n in range(1, len(files) + 1)
    ]
    assert _export_counts(export) == Counter(printed)
    # AND the directory is 0700 and every file in it 0600, whatever the umask
    assert _mode(tuned.audit_directory) == 0o700
    assert {_mode(p) for p in tuned.audit_directory.iterdir()} == {0o600}


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_a_stretch_of_an_event_leaves_no_job_in_redis_and_each_in_the_export(
    redis: Redis, settings: CoordinatorSettings
) -> None:
    # GIVEN 2,000 badges printed while the sweep runs beside them, as in upkeep
    tuned = _settings(settings)
    store = Store(redis, tuned)
    export = AuditExport(tuned.audit_directory, tuned.audit_file_max_bytes)
    sweeper = RetentionSweeper(store, export)
    stop = asyncio.Event()

    async def upkeep() -> None:
        while not stop.is_set():
            await sweeper.sweep_once()
            await asyncio.sleep(0.2)

    sweeping = asyncio.create_task(upkeep())
    try:
        printed = await _print_jobs(store, 2000)
        # WHEN the last job's retention has passed
        await wait_for(lambda: _none_left(redis, store), 30, interval_s=0.2)
    finally:
        stop.set()
        await sweeping
    # THEN no job is left in Redis, and the export has every job exactly once
    assert await _jobs_in_redis(redis, store) == 0
    assert await store.retention.closed_count() == 0
    assert _export_counts(export) == Counter(printed)
    assert len(printed) == 2000


async def _none_left(redis: Redis, store: Store) -> bool:
    return await _jobs_in_redis(redis, store) == 0


async def test_a_job_that_changed_after_a_dead_sweeper_wrote_it_is_written_again(
    redis: Redis, settings: CoordinatorSettings
) -> None:
    # GIVEN a job that failed, claimed and written by a sweeper that then died
    tuned = _settings(settings).model_copy(update={"max_attempts": 1})
    store = Store(redis, tuned)
    report = PrinterHealthReport(reachable=True)
    beat = HeartbeatRequest(agent_id="pi-printer-a", version="t", health=report)
    await store.printers.heartbeat("printer-a", beat, probe_verdict(report))
    job = PrintJob(attendee_id="att_0badf00d", badge_pdf_ref="https://badges.example/a.pdf",
                   printer_target="printer-a", priority=100,
                   idempotency_key="scan-late-ack")  # fmt: skip
    await store.jobs.accept(job, route=Route("printer-a"), correlation_id="c", actor="kiosk:t")
    (leased,) = (await store.leases.lease("printer-a", 1, "agent")).jobs
    await store.leases.grant_start("printer-a", leased.job_id, leased.lease_id, "agent")
    failed = AckRequest(lease_id=leased.lease_id, result=AckResult.FAILED, error="jam")
    assert (await store.leases.ack("printer-a", leased.job_id, failed, "agent")).state == "failed"
    export = AuditExport(tuned.audit_directory, tuned.audit_file_max_bytes)
    dying = RetentionSweeper(store, export, hold_s=0.5)
    await wait_for(lambda: _all_due(redis, store, 1), 10, interval_s=0.1)
    claim = await dying.claim()
    await dying.write(claim)
    # WHEN the agent's late report says the badge did print, before anyone removed it
    printed = AckRequest(lease_id=leased.lease_id, result=AckResult.PRINTED)
    assert (await store.leases.ack("printer-a", leased.job_id, printed, "a")).state == "printed"
    await wait_for(lambda: _swept_all(RetentionSweeper(store, export), redis, store), 10,
                   interval_s=0.1)  # fmt: skip
    # THEN the export holds both versions, the later one last, and that is what is read
    states = [r["job"]["state"] for r in export.records() if r["job_id"] == leased.job_id]
    assert states == ["failed", "printed"]
    found = export.find(leased.job_id)
    assert found is not None and found[0]["job"]["state"] == "printed"
