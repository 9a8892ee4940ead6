"""badgeline beside CUPS, in one run: the same badges to the same four emulators.

    .venv/bin/python bench/vs_cups.py [--jobs 2000] [--concurrency 16] [--rounds 1]
        [--distinct-badges 50] [--ms-per-badge 0] [--pipeline-depth N] [--nice -10] [--keep DIR]

Quick check: `--jobs 200`. `--language zpl` runs the label printer mode instead
(bench/vs_cups_zpl.py: CUPS's own Zebra driver on PDFs beside badgeline's ZPL agents,
its own options). Needs Debian's CUPS (`apt-get install --no-install-recommends
cups cups-client`); the bench starts a private cupsd of its own and never the system's.

Both systems print to the same four printer emulators (`badgeline emulator`), each
behind a relay (bench/jobrelay.py, a process of its own) that notes when each
badge's first byte (`ESC @`) arrives and which badge it was (its `job <id>` footer):

- CUPS: a private cupsd (its own ServerRoot, spool and port on 127.0.0.1) with four
  raw `socket://` queues, one per emulator, in one class; each job is an IPP
  Print-Job to the class with `document-format application/vnd.cups-raw` (what
  `lp -o raw` sends) carrying the badge's ESC/POS bytes, rasterised beforehand;
- badgeline: `LocalVenue` (coordinator + embedded Redis, four agents); each job is
  the badge PDF (`PUT /v1/artifacts`) and `POST /v1/jobs` with target `auto`, and
  the agents fetch and rasterise the PDF themselves.

The badges are `--distinct-badges` sample PDFs cycled over the jobs; a CUPS job's
bytes are exactly what the agent would send for that PDF, footer included.
Kiosk clients (`--concurrency` of them, in this process) submit every job as fast
as answered. Measured per system, counted at the emulators (the ground truth):
time from the first submit to the last badge out (drain), badges printed exactly
once, submit → first byte p50/p99, and the CPU the system's processes used (cupsd
and its backends; coordinator, Redis, agents and their render workers). Systems
alternate over `--rounds`, emulators reset between them. Prints a table; asserts
nothing. Everything started is stopped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import itertools
import json
import os
import secrets
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

# Run from a checkout without installing: make `badgeline` importable.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp
from benchkit import git_revision, load_average, machine_busy_seconds, percentile, stop_venue
from cupsd import INSTALL_HINT, PrivateCupsd, missing_tools, print_job
from proccpu import priority, tree_cpu_seconds

from badgeline.badge import WIDTH_DOTS_80MM, badge_to_escpos
from badgeline.coordinator.store.embedded import free_port
from badgeline.localvenue import LocalVenue, http_json
from badgeline.samples import sample_badge_pdf

BENCH = Path(__file__).resolve().parent
PRINTERS = ("printer-v1", "printer-v2", "printer-v3", "printer-v4")
CUPS_CLASS = "badges"
PLACEHOLDER = "cups-XXXXXXXXXX"  # as long as a CUPS badge id: c<tag 8>-<nnnnn>
WARMUP_JOBS = 8
POLL_S = 0.05
STALL_S = 60  # a phase gives up when no badge has come out for this long


@dataclass
class Phase:
    system: str
    jobs: int
    submitted_at: dict[str, float] = field(default_factory=dict)  # badge id -> submit start
    accept_ms: list[float] = field(default_factory=list)
    statuses: Counter[str] = field(default_factory=Counter)
    first_submit: float = 0.0
    last_answer: float = 0.0
    last_out: float = 0.0
    printed: Counter[str] = field(default_factory=Counter)  # badge id -> times printed
    first_byte_ms: list[float] = field(default_factory=list)
    print_gap_ms: list[float] = field(default_factory=list)  # between badges of one printer
    per_printer: list[tuple[int, float, float]] = field(default_factory=list)  # count, first, last
    cpu_s: dict[str, float] = field(default_factory=dict)  # process group -> CPU seconds
    machine_cpu_s: float = 0.0

    @property
    def drain_s(self) -> float:
        return self.last_out - self.first_submit

    @property
    def rate(self) -> float:
        return self.jobs / self.drain_s if self.drain_s > 0 else 0.0

    @property
    def once(self) -> int:
        return sum(1 for badge in self.submitted_at if self.printed.get(badge) == 1)


# --------------------------------------------------------------------------- badges


def make_badges(count: int) -> tuple[list[bytes], list[bytes]]:
    """(PDFs, ESC/POS of each PDF with a placeholder footer) for `count` attendees."""
    pdfs = [sample_badge_pdf(f"A-VS{n:05d}", f"Attendee {n}", "Side By Side Ltd")
            for n in range(count)]  # fmt: skip
    escpos = [badge_to_escpos(pdf, WIDTH_DOTS_80MM, PLACEHOLDER) for pdf in pdfs]
    return pdfs, escpos


def cups_document(template: bytes, badge_id: str) -> bytes:
    """The bytes the agent would send for this PDF with footer `job <badge_id>`."""
    assert len(badge_id) == len(PLACEHOLDER)
    return template.replace(f"job {PLACEHOLDER}\n".encode(), f"job {badge_id}\n".encode())


# --------------------------------------------------------------------------- relays


class RelayProcess:
    def __init__(self, targets: list[int]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(BENCH / "jobrelay.py"), *map(str, targets)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        self.ports: list[int] = json.loads(self._line())

    def _line(self) -> str:
        assert self.process.stdout is not None
        return self.process.stdout.readline()

    def command(self, command: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()

    def dump(self) -> dict[str, float]:
        self.command("dump")
        seen: dict[str, float] = json.loads(self._line())
        return seen

    def stop(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


# --------------------------------------------------------------------------- one phase


Submit = Callable[[aiohttp.ClientSession, int], Awaitable[tuple[str | None, str]]]


async def submit_badge(
    session: aiohttp.ClientSession, venue: LocalVenue, name: str, pdf: bytes,
    attendee_id: str, idempotency_key: str,
) -> tuple[str | None, str]:  # fmt: skip
    """A kiosk's two requests for one badge (its PDF as artifact `name`, then the job on
    `auto`): the job id and "ok", or None and what went wrong."""
    auth = {"Authorization": f"Bearer {venue.kiosk_token}"}
    async with session.put(f"{venue.url}/v1/artifacts/{name}", data=pdf,
                           headers=auth) as response:  # fmt: skip
        await response.read()
        if response.status // 100 != 2:
            return None, f"artifact {response.status}"
    body = {"attendee_id": attendee_id, "printer_target": "auto",
            "badge_pdf_ref": f"artifact://{name}", "priority": 100,
            "idempotency_key": idempotency_key}  # fmt: skip
    async with session.post(f"{venue.url}/v1/jobs", json=body, headers=auth) as response:
        answer = await response.json()
        if response.status != 201:
            return None, f"http {response.status}"
        return str(answer["job_id"]), "ok"


async def submit_all(phase: Phase, submit: Submit, concurrency: int) -> None:
    """Every job once, by `concurrency` clients as fast as answered."""
    jobs = iter(range(phase.jobs))
    connector = aiohttp.TCPConnector(limit=concurrency)
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:

        async def client() -> None:
            for number in jobs:
                started = time.time()
                try:
                    badge_id, status = await submit(session, number)
                except (aiohttp.ClientError, TimeoutError) as error:
                    badge_id, status = None, type(error).__name__
                phase.last_answer = time.time()
                phase.accept_ms.append((phase.last_answer - started) * 1000)
                phase.statuses[status] += 1
                if badge_id is not None:
                    phase.submitted_at[badge_id] = started

        phase.first_submit = time.time()
        await asyncio.gather(*(client() for _ in range(concurrency)))


async def wait_printed(urls: list[str], expected: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    last_total, last_change = -1, time.monotonic()
    async with aiohttp.ClientSession() as session:
        while time.monotonic() < deadline:
            total = 0
            for url in urls:
                async with session.get(url + "/status") as response:
                    total += (await response.json())["printed"]
            if total >= expected:
                return
            if total != last_total:
                last_total, last_change = total, time.monotonic()
            elif time.monotonic() - last_change > STALL_S:
                print(f"  (nothing came out for {STALL_S} s: {total}/{expected}; giving up)")
                return
            await asyncio.sleep(POLL_S)
    print(f"  (gave up waiting after {timeout_s:.0f} s: not every badge came out)")


async def run_phase(bench: Bench, system: str, jobs: int, timed: bool) -> Phase:
    phase = Phase(system, jobs)
    urls = [bench.venue.emulator_url(p) for p in PRINTERS]
    for url in urls:
        http_json("POST", url + "/reset")
    bench.relays.command("reset")
    groups = bench.process_groups(system)
    cpu_before = {name: tree_cpu_seconds(pids) for name, pids in groups.items()}
    machine_before = machine_busy_seconds()
    submit = bench.submit_cups if system == "cups" else bench.submit_badgeline
    waiter = asyncio.create_task(wait_printed(urls, jobs, bench.args.timeout))
    await submit_all(phase, submit, bench.args.concurrency)
    await waiter
    phase.cpu_s = {name: tree_cpu_seconds(pids) - cpu_before[name]
                   for name, pids in groups.items()}  # fmt: skip
    phase.machine_cpu_s = machine_busy_seconds() - machine_before
    for url in urls:
        rows = http_json("GET", url + "/printed")
        for row in rows:
            phase.printed[row["job_id"]] += 1
            phase.last_out = max(phase.last_out, row["at"])
        times = sorted(row["at"] for row in rows)
        phase.print_gap_ms += [(b - a) * 1000 for a, b in itertools.pairwise(times)]
        if times:
            phase.per_printer.append((len(times), times[0], times[-1]))
    first_bytes = bench.relays.dump()
    phase.first_byte_ms = [(first_bytes[b] - at) * 1000
                           for b, at in phase.submitted_at.items() if b in first_bytes]  # fmt: skip
    if timed:
        print(f"  {system:<10} drained {jobs} in {phase.drain_s:6.2f} s "
              f"({phase.rate:6.1f} jobs/s), {phase.once} printed once", flush=True)  # fmt: skip
    return phase


# --------------------------------------------------------------------------- the bench


@dataclass
class Bench:
    args: argparse.Namespace
    venue: LocalVenue
    cups: PrivateCupsd
    relays: RelayProcess
    pdfs: list[bytes]
    refs: list[str]
    escpos: list[bytes]
    tag: str = field(default_factory=lambda: secrets.token_hex(3))
    phases: int = 0
    current: str = ""  # the running phase's tag, in its badge ids and idempotency keys

    def process_groups(self, system: str) -> dict[str, list[int]]:
        """The processes whose CPU a phase reports, by group; the system's own first."""

        def named(prefix: str) -> list[int]:
            return [m.process.pid for m in self.venue.processes.values()
                    if m.process is not None and m.name.startswith(prefix)]  # fmt: skip

        assert self.cups.process is not None
        own = ({"cupsd": [self.cups.process.pid]} if system == "cups" else
               {"coordinator": named("coordinator"), "agents": named("agent")})  # fmt: skip
        return {**own, "emulators": named("emulator"), "relay": [self.relays.process.pid]}

    def next_tag(self) -> str:
        self.phases += 1
        return f"{self.tag}{self.phases:02d}"

    async def submit_cups(self, session: aiohttp.ClientSession, number: int) -> tuple[str, str]:
        badge_id = f"c{self.current}-{number:05d}"
        document = cups_document(self.escpos[number % len(self.escpos)], badge_id)
        status = await print_job(session, self.cups.queue_url(CUPS_CLASS, "classes"),
                                 badge_id, document)  # fmt: skip
        return badge_id, "ok" if status == 0 else f"ipp {status:#x}"

    async def submit_badgeline(
        self, session: aiohttp.ClientSession, number: int
    ) -> tuple[str | None, str]:
        which = number % len(self.pdfs)
        return await submit_badge(session, self.venue, self.refs[which], self.pdfs[which],
                                  f"A-VS{which:05d}", f"vs-{self.current}-{number}")  # fmt: skip

    async def phase(self, system: str, jobs: int, timed: bool = True) -> Phase:
        self.current = self.next_tag()
        return await run_phase(self, system, jobs, timed)


def start_everything(root: Path, args: argparse.Namespace) -> Bench:
    print(f"preparing {args.distinct_badges} distinct badge PDFs and their ESC/POS ...", flush=True)
    pdfs, escpos = make_badges(args.distinct_badges)
    venue = LocalVenue(root / "venue", printer_ids=PRINTERS, extra_coordinator_config={
        "venue": "vscups" + secrets.token_hex(3), "high_water_mark": 100_000})  # fmt: skip
    relays = RelayProcess([venue.printers[p].port for p in PRINTERS])
    depth = {} if args.pipeline_depth is None else {"print_pipeline_depth": args.pipeline_depth}
    venue.agent_overrides = {p: {"printer": {"port": port}, **depth}
                             for p, port in zip(PRINTERS, relays.ports, strict=True)}  # fmt: skip
    cups = PrivateCupsd(root / "cups", free_port())
    bench = Bench(args, venue, cups, relays, pdfs, [], escpos)
    print("starting the venue (coordinator, Redis, 4 emulators, 4 agents) and cupsd ...",
          flush=True)  # fmt: skip
    try:
        venue.start()
        for printer_id in PRINTERS:
            venue.set_speed(printer_id, args.ms_per_badge)
        cups.start()
        for number, printer_id in enumerate(PRINTERS):
            cups.add_raw_socket_printer(printer_id, relays.ports[number], CUPS_CLASS)
        cups.enable(CUPS_CLASS)
    except BaseException:
        stop_everything(bench, venue)  # what did start must not outlive a failed start
        raise
    bench.refs = [hashlib.sha256(pdf).hexdigest() + ".pdf" for pdf in pdfs]
    return bench


def stop_everything(bench: Bench | None, venue: LocalVenue | None) -> None:
    if bench is not None:
        bench.cups.stop()
        bench.relays.stop()
    if venue is not None:
        stop_venue(venue)


# --------------------------------------------------------------------------- report


def own_cpu(phase: Phase) -> float:
    """CPU of the system's own processes (cupsd and backends; coordinator, Redis, agents)."""
    return sum(cpu for name, cpu in phase.cpu_s.items() if name not in ("emulators", "relay"))


def report(phases: list[Phase], args: argparse.Namespace) -> None:
    print(f"\n{args.jobs} jobs per system per round, {args.concurrency} kiosk clients, "
          f"4 printers, emulator print time {args.ms_per_badge} ms/badge; median over "
          f"{args.rounds} round(s)")  # fmt: skip
    print(f"{'system':<10} {'drain s':>8} {'jobs/s':>7} {'printed once':>12} {'non-ok':>6} "
          f"{'first byte p50':>14} {'p99 ms':>7} {'submit p50':>10} {'p99 ms':>7} "
          f"{'submitted s':>11} {'gap ms':>6} {'CPU s':>6} {'machine CPU s':>13}")  # fmt: skip
    rates = {}
    for system in ("cups", "badgeline"):
        mine = [p for p in phases if p.system == system]
        if not mine:
            continue
        med = statistics.median
        rates[system] = med(p.rate for p in mine)
        bad = sum(n for p in mine for s, n in p.statuses.items() if s != "ok")
        once = f"{min(p.once for p in mine)}/{args.jobs}"
        print(
            f"{system:<10} {med(p.drain_s for p in mine):8.2f} {rates[system]:7.1f} "
            f"{once:>12} {bad:>6} "
            f"{med(percentile(p.first_byte_ms, 50) for p in mine):14.0f} "
            f"{med(percentile(p.first_byte_ms, 99) for p in mine):7.0f} "
            f"{med(percentile(p.accept_ms, 50) for p in mine):10.1f} "
            f"{med(percentile(p.accept_ms, 99) for p in mine):7.1f} "
            f"{med(p.last_answer - p.first_submit for p in mine):11.2f} "
            f"{med(statistics.median(p.print_gap_ms or [0]) for p in mine):6.0f} "
            f"{med(own_cpu(p) for p in mine):6.1f} {med(p.machine_cpu_s for p in mine):13.1f}"
        )
    for phase in phases:
        # Where a drain's time goes besides the printing: the wait for each printer's
        # first badge, and an uneven share of the badges between the printers.
        t0 = phase.first_submit
        spans = ", ".join(f"{n} {a - t0:.2f}-{b - t0:.2f}" for n, a, b in phase.per_printer)
        print(f"  {phase.system}: badges per printer, first-last out (s after the first submit): "
              + spans)  # fmt: skip
    for phase in phases:
        print(
            f"  CPU s of {phase.system}'s phase by process group: "
            + ", ".join(f"{name} {cpu:.1f}" for name, cpu in phase.cpu_s.items())
        )
    if len(rates) == 2:
        ratio = rates["badgeline"] / rates["cups"]
        verdict = "met" if ratio >= 1.0 else "MISSED"
        print(f"badgeline / CUPS drain rate: {ratio:.2f}x (target >= 1.0x: {verdict})")
    paired = [b.rate / c.rate for c, b in zip(
        [p for p in phases if p.system == "cups"],
        [p for p in phases if p.system == "badgeline"], strict=False) if c.rate]  # fmt: skip
    if len(paired) > 1:
        print("per-round ratios: " + " ".join(f"{r:.2f}" for r in paired))
    for phase in phases:
        problems = {s: n for s, n in phase.statuses.items() if s != "ok"}
        extra = sum(n - 1 for n in phase.printed.values() if n > 1)
        if problems or extra or phase.once != phase.jobs:
            print(f"  {phase.system}: answers {dict(phase.statuses)}, {extra} extra prints, "
                  f"{phase.jobs - phase.once} not printed exactly once")  # fmt: skip
    print(
        "first byte: submit start -> the badge's first byte at its printer (relay clock);"
        " submit: kiosk round trip (badgeline: artifact PUT + POST /v1/jobs; CUPS: IPP"
        " Print-Job with the bytes); submitted s: first submit to last answer; gap ms:"
        " median time between two badges of one printer; CPU s: the system's processes"
        " during the phase; machine CPU s: everything on the machine (emulators, others)"
    )


async def run(args: argparse.Namespace, root: Path) -> list[Phase]:
    bench: Bench | None = None
    venue: LocalVenue | None = None
    phases: list[Phase] = []
    try:
        bench = start_everything(root, args)
        venue = bench.venue
        for system in ("cups", "badgeline"):
            await bench.phase(system, WARMUP_JOBS, timed=False)
        order = ["cups", "badgeline"]
        for round_number in range(args.rounds):
            print(f"round {round_number + 1}: load average {load_average()}", flush=True)
            for system in order:
                phases.append(await bench.phase(system, args.jobs))
            order.reverse()
    finally:
        await asyncio.to_thread(stop_everything, bench, venue)
    return phases


def cups_version() -> str:
    query = ["dpkg-query", "-W", "-f", "${Version}", "cups-daemon"]
    return subprocess.run(query, capture_output=True, text=True).stdout or "?"


def main() -> int:
    language = argparse.ArgumentParser(add_help=False)
    language.add_argument("--language", choices=("escpos", "zpl"), default="escpos")
    chosen, rest = language.parse_known_args()
    if chosen.language == "zpl":
        import vs_cups_zpl

        return vs_cups_zpl.main(rest)
    sys.argv[1:] = rest
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--jobs", type=int, default=2000, help="jobs per system per round")
    parser.add_argument("--concurrency", type=int, default=16, help="parallel kiosk clients")
    parser.add_argument("--rounds", type=int, default=1, help="rounds, systems alternating")
    parser.add_argument("--distinct-badges", type=int, default=50, help="distinct badge PDFs")
    parser.add_argument(
        "--ms-per-badge",
        type=int,
        default=0,
        help="emulator print time per badge (0 = as fast as bytes arrive)",
    )
    parser.add_argument(
        "--pipeline-depth",
        type=int,
        help="the agents' print_pipeline_depth (default: the agent's default)",
    )
    parser.add_argument("--timeout", type=float, default=300, help="per-phase limit in seconds")
    parser.add_argument("--nice", type=int, default=0,
                        help="run the bench and all it starts (both systems) at this niceness;"
                        " -10: ahead of other work on a shared machine (root)")  # fmt: skip
    parser.add_argument("--keep", type=Path, help="keep logs and state under DIR")
    parser.add_argument(
        "--language",
        choices=("escpos", "zpl"),
        default="escpos",
        help="zpl: the label printer mode (its options: --language zpl -h)",
    )
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    if missing_tools():
        print(INSTALL_HINT, file=sys.stderr)
        return 2
    print("vs_cups: badgeline beside a private CUPS, same badges, same emulators")
    print(f"code: {git_revision()}")
    print("command: " + shlex.join([".venv/bin/python", "bench/vs_cups.py", *sys.argv[1:]]))
    print(f"machine: {os.cpu_count()} cores, load average {load_average()}; "
          f"cupsd {cups_version()}")  # fmt: skip
    root = args.keep or Path(tempfile.mkdtemp(prefix="badgeline-vs-cups-"))
    # cupsd runs its backends as user lp, which must be able to reach the spool below.
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o711)
    try:
        with priority(args.nice) as said:
            print(f"priority: {said}", flush=True)
            phases = asyncio.run(run(args, root))
    except KeyboardInterrupt:
        return 130
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    report(phases, args)
    print(f"load average at the end: {load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
