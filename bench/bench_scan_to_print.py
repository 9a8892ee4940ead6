"""Scan to print on an idle fleet: from a kiosk's submit to the badge at the printer.

    .venv/bin/python bench/bench_scan_to_print.py [--jobs 200] [--warmup 5] [--agent-debug-log]

A benchmark, not a test: it prints figures and asserts nothing. A whole venue
runs as real processes (`LocalVenue`: coordinator with embedded Redis, three
printer emulators, three agents); one job at a time is submitted, naming the
printers in turn, and the next only once the previous one has printed, so the
fleet is idle at every submit.

Three intervals per job, all on this machine's wall clock (`time.time()` in
every process):

- accept: the `POST /v1/jobs` round trip as the kiosk sees it;
- first byte: submit → the first byte of the badge's ESC/POS job (`ESC @`)
  reaching the printer port. The emulator does not record when bytes arrive,
  so each agent talks to its emulator through a relay in this process that
  notes the time of the first chunk carrying `ESC @` after the submit (status
  probes are `DLE EOT n` and do not count). The relay adds one loopback hop;
- badge out: submit → the emulator's `/printed` row `at`, taken when the cut
  page reaches its print head (all bytes received and decoded; slow mode off),
  before its PNG is written.

Targets (docs/benchmarks.md): scan-to-first-byte p50 ≤ 50 ms, p99 ≤ 150 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

# Run from a checkout without installing: make `badgeline` importable.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from badgeline.localvenue import LocalVenue, http_json, wait_until
from badgeline.samples import sample_badge_pdf

Result = tuple[float, float, float, str, float]
P50_TARGET_MS = 50.0
P99_TARGET_MS = 150.0
ESC_INIT = b"\x1b@"
POLL_S = 0.002


class FirstByteRelay:
    """A TCP relay in front of one emulator that notes when job bytes pass through."""

    def __init__(self, target_port: int, loop: asyncio.AbstractEventLoop) -> None:
        self.target_port = target_port
        self.loop = loop
        self.port = 0
        self.job_starts: list[float] = []  # time.time() of each chunk carrying ESC @

    async def start(self) -> None:
        server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        await asyncio.gather(
            self._pump(reader, up_writer, watch=True),
            self._pump(up_reader, writer, watch=False),
            return_exceptions=True,
        )

    async def _pump(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, watch: bool
    ) -> None:
        with contextlib.suppress(ConnectionError):
            while data := await reader.read(65536):
                if watch and ESC_INIT in data:
                    self.job_starts.append(time.time())
                writer.write(data)
                await writer.drain()
        writer.close()

    def first_job_start_after(self, moment: float) -> float | None:
        return next((at for at in self.job_starts if at >= moment), None)


def start_relays(venue: LocalVenue) -> dict[str, FirstByteRelay]:
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, name="relays", daemon=True).start()
    relays = {}
    for printer_id, slot in venue.printers.items():
        relay = FirstByteRelay(slot.port, loop)
        asyncio.run_coroutine_threadsafe(relay.start(), loop).result(10)
        relays[printer_id] = relay
    return relays


def start_venue(venue: LocalVenue, relays: dict[str, FirstByteRelay]) -> None:
    """LocalVenue.start(), except that each agent's printer port is its relay's."""
    (venue.root / "logs").mkdir(parents=True, exist_ok=True)
    venue.start_coordinator()
    for printer_id in venue.printer_ids:
        venue.start_emulator(printer_id)
    for printer_id in venue.printer_ids:
        # Environment overrides the agent's TOML; a table from it merges into the file's.
        os.environ["BADGELINE_AGENT_PRINTER"] = json.dumps({"port": relays[printer_id].port})
        try:
            venue.start_agent(printer_id)
        finally:
            del os.environ["BADGELINE_AGENT_PRINTER"]
    wait_until(venue.all_printers_healthy, 60, "every printer to report healthy")


def printed_at(venue: LocalVenue, printer_id: str, job_id: str) -> float | None:
    rows = http_json("GET", venue.emulator_url(printer_id) + "/printed")
    return next((float(row["at"]) for row in rows if row["job_id"] == job_id), None)


# Logged events that carry a job id, in the order a job meets them (`ts` has ms precision).
STAGES = (
    ("coordinator", "job_enqueued"),
    ("coordinator", "job_leased"),
    ("agent", "lease_journaled"),  # written while the badge is fetched and rendered
    ("agent", "badge_fetched"),  # logged at DEBUG only: --agent-debug-log
    ("agent", "badge_prepared"),  # idem: fetched and rendered
    ("coordinator", "start_granted"),
    ("agent", "badge_printed"),
    ("agent", "ack_confirmed"),
)


def logged_events(venue: LocalVenue) -> dict[tuple[str, str], float]:
    """(job_id, event) -> first time logged, from every process's JSON log lines."""
    seen: dict[tuple[str, str], float] = {}
    for log in (venue.root / "logs").glob("*.log"):
        for line in log.read_text(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                record = json.loads(line)
                key = (record.get("job_id"), record.get("event"))
                if key[0] and key[1]:
                    seen.setdefault(key, float(record["ts"]))
    return seen


def breakdown(venue: LocalVenue, submits: list[tuple[str, float]]) -> None:
    """Median time from the submit to each logged stage of the measured jobs."""
    seen = logged_events(venue)
    print("  where the time goes (median ms after the submit, from the processes' logs):")
    for process, event in STAGES:
        delays = [(seen[(job_id, event)] - at) * 1000
                  for job_id, at in submits if (job_id, event) in seen]  # fmt: skip
        if delays:
            print(f"    {process:<12} {event:<16} {statistics.median(delays):7.1f}")


def one_job(
    venue: LocalVenue, relay: FirstByteRelay, printer_id: str, ref: str, number: int
) -> Result:
    """(accept ms, first byte ms, badge out ms, job id, submit time) of one job."""
    submitted = time.time()
    job_id = venue.submit(printer_id, f"A-BENCH-{number:05d}", ref)["job_id"]
    accepted = time.time()
    deadline = time.monotonic() + 30
    while (out := printed_at(venue, printer_id, job_id)) is None:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{job_id} did not print on {printer_id} within 30 s")
        time.sleep(POLL_S)
    first_byte = relay.first_job_start_after(submitted)
    assert first_byte is not None, "the badge printed but the relay saw no job start"
    return ((accepted - submitted) * 1000, (first_byte - submitted) * 1000,
            (out - submitted) * 1000, job_id, submitted)  # fmt: skip


def percentile(values: list[float], share: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def report(name: str, values: list[float], targets: tuple[float, float] | None) -> None:
    p50, p99 = percentile(values, 0.50), percentile(values, 0.99)
    mean = statistics.mean(values)
    line = (f"  {name:<12} p50 {p50:7.1f} ms   p99 {p99:7.1f} ms   mean {mean:7.1f}"
            f"   min {min(values):7.1f}   max {max(values):7.1f}")  # fmt: skip
    if targets is not None:
        met = p50 <= targets[0] and p99 <= targets[1]
        line += (
            f"   targets ≤ {targets[0]:.0f} / ≤ {targets[1]:.0f} ms: {'met' if met else 'MISSED'}"
        )
    print(line)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=200, help="measured jobs")
    parser.add_argument("--warmup", type=int, default=5, help="jobs run first, not measured")
    parser.add_argument("--agent-debug-log", action="store_true",
                        help="agents log at DEBUG, adding badge_fetched and badge_prepared"
                        " (fetched and rendered) to the breakdown, at the cost of more"
                        " logging")  # fmt: skip
    args = parser.parse_args()
    if args.agent_debug_log:
        os.environ["BADGELINE_AGENT_LOG_LEVEL"] = "DEBUG"
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="bench-scan-") as root:
        # No mDNS: another coordinator on this host advertising the same venue name
        # would make ours exit at start-up (NameConflict).
        venue = LocalVenue(Path(root), extra_coordinator_config={"mdns": False})
        relays = start_relays(venue)
        try:
            start_venue(venue, relays)
            ref = venue.upload_badge(sample_badge_pdf("A-BENCH", "Benchmark Badge", "Timing Ltd"))
            results = []
            for number in range(args.warmup + args.jobs):
                printer_id = venue.printer_ids[number % len(venue.printer_ids)]
                results.append(one_job(venue, relays[printer_id], printer_id, ref, number))
        finally:
            venue.stop()
        measured = results[args.warmup :]
        report_all(venue, args.warmup, results, measured)
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


def report_all(
    venue: LocalVenue, warmup: int, results: list[Result], measured: list[Result]
) -> None:
    print(f"\n{len(measured)} jobs, one at a time on an idle fleet of {len(venue.printer_ids)}"
          f" (first {warmup} not counted: {[round(r[1]) for r in results[:warmup]]}"
          " ms to first byte)")  # fmt: skip
    report("accept", [r[0] for r in measured], None)
    report("first byte", [r[1] for r in measured], (P50_TARGET_MS, P99_TARGET_MS))
    report("badge out", [r[2] for r in measured], None)
    breakdown(venue, [(r[3], r[4]) for r in measured])


if __name__ == "__main__":
    sys.exit(main())
