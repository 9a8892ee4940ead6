"""Job events delivered per second by one coordinator to 200 GET /v1/events subscribers.

    .venv/bin/python bench/bench_events.py [--subscribers 200] [--operators 50]
        [--kiosks 15] [--seconds 15] [--producers 8] [--rate 0]

One run starts one Redis (the shipped valkey-server, `appendfsync always`) and the real
coordinator in its own process (`badgeline coordinator`), with one operator token and
`--kiosks` kiosk tokens. This process opens the subscribers: `--operators` operator
streams (each gets every event) and the rest kiosk streams spread evenly over the
kiosk tokens (each gets its kiosk's events only), and waits until each is connected.
Producers then make jobs change state through the store's own scripts, as the
coordinator's routes do (accept, then cancel: two events a job, each appended to the
venue's stream by transition()), submitted in the kiosks' names in turn, for
`--seconds`: as fast as they can (closed loop), or at `--rate` events/s offered.
Once they stop, the run waits until every subscriber has every event it should get.

Reported: events/s produced, deliveries/s (one event to one subscriber), both from
the first event to the last delivery; the time the last deliveries took after the
producers stopped; the delivery lag (from an event's `at`, the Redis clock on this
machine, to its arrival here; one sample per read, of the newest event in it) p50
and p99; and the coordinator's CPU. The machine has 2 cores shared by Redis, the
coordinator and this process (producers and 200 readers), so the CPU each used is
printed beside the figures. A benchmark, not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

# Run from a checkout without installing: make `badgeline` importable.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp
from benchkit import (
    HOST,
    coordinator_command,
    cpu_seconds,
    git_revision,
    load_average,
    percentile,
    spawn,
    stop_process,
    wait_until_serving,
)

from badgeline.coordinator.api.auth import token_digest
from badgeline.coordinator.config import CoordinatorSettings
from badgeline.coordinator.control.routing import Router
from badgeline.coordinator.store import Store
from badgeline.coordinator.store.connection import connected
from badgeline.coordinator.store.embedded import EmbeddedRedis, free_port
from badgeline.coordinator.store.records import JobOwner
from badgeline.protocol.job import PrintJob

VENUE = "bench-events"
PRINTER = "printer-a"
OPERATOR_TOKEN = "bench-events-operator"
_AT = re.compile(rb'"at":([0-9.]+)')
_MARK = b"event: job\n"


def kiosk_token(n: int) -> str:
    return f"bench-events-kiosk-{n}"


def write_config(path: Path, kiosks: int, state_dir: Path) -> None:
    lines = [f'venue = "{VENUE}"', "high_water_mark = 100000", "mdns = false",
             f"state_dir = {json.dumps(str(state_dir))}", f'known_printers = ["{PRINTER}"]',
             "event_streams_per_caller = 1000", ""]  # fmt: skip
    tokens = [("bench-ops", "operator", OPERATOR_TOKEN)]
    tokens += [(f"kiosk-{n}", "kiosk", kiosk_token(n)) for n in range(kiosks)]
    for name, role, token in tokens:
        lines += ["[[tokens]]", f'name = "{name}"', f'role = "{role}"',
                  f'sha256 = "{token_digest(token)}"', ""]  # fmt: skip
    path.write_text("\n".join(lines), encoding="utf-8")


@dataclass
class Subscriber:
    token: str
    kiosk: int | None  # None: an operator's stream
    received: int = 0
    lags: list[float] = field(default_factory=list)
    last_at: float = 0.0
    connected: asyncio.Event = field(default_factory=asyncio.Event)

    async def follow(self, session: aiohttp.ClientSession, url: str) -> None:
        headers = {"Authorization": f"Bearer {self.token}"}
        async with session.get(url, headers=headers) as response:
            assert response.status == 200, response.status
            tail = b""
            async for chunk in response.content.iter_any():
                data = tail + chunk
                self.received += data.count(_MARK)
                # A marker cut in two at the chunk's end is counted with the next one.
                cut = data.rfind(b"\n")
                tail = data[cut + 1 :] if cut >= 0 else data
                if b": connected" in chunk:
                    self.connected.set()
                found = _AT.findall(chunk)
                if found:
                    now = time.time()
                    self.last_at = now
                    self.lags.append(now - float(found[-1]))


@dataclass
class Produced:
    events_by_kiosk: dict[int, int]
    first: float = 0.0
    last: float = 0.0

    @property
    def total(self) -> int:
        return sum(self.events_by_kiosk.values())


async def produce(store: Store, settings: CoordinatorSettings, kiosks: int, producers: int,
                  seconds: float, rate: float) -> Produced:  # fmt: skip
    produced = Produced(dict.fromkeys(range(kiosks), 0))
    route = Router(settings).route(PRINTER)
    deadline = time.monotonic() + seconds
    counter = iter(range(10**9))
    interval = producers * 2 / rate if rate else 0.0
    produced.first = time.time()

    async def producer(p: int) -> None:
        due = time.monotonic()
        while time.monotonic() < deadline:
            n = next(counter)
            kiosk = n % kiosks
            job = PrintJob(
                attendee_id=f"att-{n:06d}", badge_pdf_ref="https://b.example/b.pdf",
                printer_target=PRINTER, idempotency_key=f"bench-events-{n:08d}",
            )  # fmt: skip
            owner = JobOwner(f"kiosk-{kiosk}", "")
            outcome = await store.jobs.accept(
                job, route=route, correlation_id=f"bench-{n}", actor=f"kiosk:kiosk-{kiosk}",
                owner=owner,
            )  # fmt: skip
            await store.jobs.cancel(outcome.job_id, "kiosk:bench", "bench")
            produced.events_by_kiosk[kiosk] += 2
            if interval:
                due += interval
                await asyncio.sleep(max(0.0, due - time.monotonic()))

    await asyncio.gather(*(producer(p) for p in range(producers)))
    produced.last = time.time()
    return produced


def expected(subscriber: Subscriber, produced: Produced) -> int:
    if subscriber.kiosk is None:
        return produced.total
    return produced.events_by_kiosk[subscriber.kiosk]


async def run(args: argparse.Namespace, work: Path) -> None:
    redis_server = EmbeddedRedis(work / "redis", appendfsync="always")
    redis_server.start()
    process = None
    try:
        config, port = work / "coordinator.toml", free_port()
        write_config(config, args.kiosks, work / "state")
        log = work / "coordinator.log"
        process = spawn(coordinator_command(config, redis_server.url, port), log)
        base = f"http://{HOST}:{port}"
        await wait_until_serving(base + "/healthz", process, log)
        settings = CoordinatorSettings(venue=VENUE, redis_url=redis_server.url, mdns=False,
                                       known_printers=[PRINTER], high_water_mark=100_000,
                                       state_dir=work / "bench-state")  # fmt: skip
        kiosk_streams = args.subscribers - args.operators
        subscribers = [Subscriber(OPERATOR_TOKEN, None) for _ in range(args.operators)]
        subscribers += [Subscriber(kiosk_token(n % args.kiosks), n % args.kiosks)
                        for n in range(kiosk_streams)]  # fmt: skip
        connector = aiohttp.TCPConnector(limit=0)
        async with (
            aiohttp.ClientSession(connector=connector) as session,
            connected(settings, redis_server.url) as redis,
        ):
            store = Store(redis, settings)
            readers = [asyncio.create_task(s.follow(session, base + "/v1/events"))
                       for s in subscribers]  # fmt: skip
            await asyncio.wait_for(asyncio.gather(*(s.connected.wait() for s in subscribers)), 60)
            cpu_before, wall_before = cpu_seconds(process.pid), time.monotonic()
            produced = await produce(store, settings, args.kiosks, args.producers, args.seconds,
                                     args.rate)  # fmt: skip
            stopped = time.time()
            drain_deadline = time.monotonic() + 120
            while time.monotonic() < drain_deadline and any(
                s.received < expected(s, produced) for s in subscribers
            ):
                await asyncio.sleep(0.05)
            last_delivery = max(s.last_at for s in subscribers)
            cpu = cpu_seconds(process.pid) - cpu_before
            wall = time.monotonic() - wall_before
            for reader in readers:
                reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, aiohttp.ClientError):
                await asyncio.gather(*readers, return_exceptions=True)
        short = sum(max(0, expected(s, produced) - s.received) for s in subscribers)
        deliveries = sum(expected(s, produced) for s in subscribers)
        span = max(last_delivery, produced.last) - produced.first
        lags = [lag * 1000 for s in subscribers for lag in s.lags]
        mode = f"offered {args.rate:g} events/s" if args.rate else "closed loop"
        print(f"revision {git_revision()}  load {load_average()}")
        print(f"{len(subscribers)} subscribers ({args.operators} operator, {kiosk_streams} kiosk"
              f" over {args.kiosks} kiosk tokens), {args.producers} producers, {mode},"
              f" {args.seconds:g} s")  # fmt: skip
        print(f"events produced   {produced.total} ({produced.total / span:,.0f} events/s)")
        print(f"deliveries        {deliveries - short} of {deliveries}"
              f" ({(deliveries - short) / span:,.0f} deliveries/s)")  # fmt: skip
        print(
            f"last delivery     {max(0.0, last_delivery - stopped) * 1000:.0f} ms after the"
            " producers stopped"
        )
        print(f"delivery lag      p50 {percentile(lags, 50):.1f} ms, p99 {percentile(lags, 99):.1f}"
              f" ms ({len(lags)} samples)")  # fmt: skip
        print(f"coordinator CPU   {cpu:.1f} s over {wall:.1f} s"
              f" ({100 * cpu / wall:.0f} % of a core)")  # fmt: skip
    finally:
        stop_process(process)
        redis_server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--subscribers", type=int, default=200)
    parser.add_argument("--operators", type=int, default=50, help="of the subscribers")
    parser.add_argument("--kiosks", type=int, default=15, help="kiosk tokens")
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--producers", type=int, default=8)
    parser.add_argument("--rate", type=float, default=0.0, help="events/s offered; 0: closed")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-events-"))
    try:
        asyncio.run(run(args, work))
    except KeyboardInterrupt:
        pass
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
