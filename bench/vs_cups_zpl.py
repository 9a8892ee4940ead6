"""badgeline beside CUPS's own Zebra driver, in one run: the same badge PDFs to the same
Zebra (ZPL) emulators.

    .venv/bin/python bench/vs_cups.py --language zpl [--jobs 120] [--slow-jobs 48]
        [--rounds 3] [--printers 4] [--slow-ms 1500] [--latency-samples 5]
        [--distinct-badges 20] [--concurrency 8] [--out DIR] [--nice -10] [--keep DIR]

Needs Debian's CUPS with its filters (`apt-get install --no-install-recommends cups
cups-client cups-filters`); the bench starts a private cupsd of its own (bench/cupsd.py).

Both systems print to the same `--printers` emulators started `--language zpl --model
ZD421` (4 x 3 in labels, 812 x 609 dots at 203 dpi):

- CUPS: one queue per emulator with CUPS's own ZPL driver (`lpadmin -m
  drv:///sample.drv/zebra.ppd`, the `rastertolabel` filter; PageSize w288h216, 203dpi),
  `socket://` to the emulator, all in one class. Each job is an IPP Print-Job of the
  badge PDF (`application/pdf`): CUPS fits the page to the label (pdftopdf), rasterises
  it (Ghostscript) and sends `~DG` + `^XG` ZPL.
- badgeline: `LocalVenue` (coordinator + embedded Redis, one agent per emulator with
  `[printer] language = "zpl"`, model ZD421); each job is the same PDF (`PUT
  /v1/artifacts`) and `POST /v1/jobs` with target `auto`; the agents rasterise it
  themselves and confirm each label by `~HS`.

Figures, counted at the emulators (the ground truth), both systems in each setting:

- drain rate: badges per second from the first submit to the last label out, with
  zero-delay printers (`--jobs`) and at `--slow-ms` a label (`--slow-jobs`); systems
  alternate over `--rounds`, emulators reset between phases. Also each drain's first
  label (first submit to first label out) and the CPU of each system's processes.
- submit-to-first-label latency: an idle system, one badge submitted, the time until its
  label is out; `--latency-samples` per system, alternating.
- the same badge from each system: both PNGs saved under `--out`, with the label's size
  in dots and resolution, the black pixels' bounding box on the label, the badge's
  scale (label dots per PDF point, from the page's own content box) and how much of
  the PDF page the label shows.

Prints a table; asserts nothing. Everything started is stopped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import itertools
import os
import secrets
import shlex
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

# Run from a checkout without installing: make `badgeline` importable.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp
from benchkit import git_revision, load_average, machine_busy_seconds, stop_venue
from cupsd import PrivateCupsd, missing_tools, print_job
from label_fit import label_fit
from proccpu import priority, tree_cpu_seconds
from vs_cups import Phase, Submit, cups_version, submit_all, submit_badge, wait_printed
from vs_cups_zpl_report import MODEL, Results, Sample, footer_band, labels_out, report

from badgeline.coordinator.store.embedded import free_port
from badgeline.localvenue import LocalVenue, http_json
from badgeline.samples import sample_badge_pdf

CUPS_DRIVER = "drv:///sample.drv/zebra.ppd"
CUPS_OPTIONS = ("PageSize=w288h216", "Resolution=203dpi")  # 4 x 3 in, in points
CUPS_CLASS = "labels"
INSTALL_HINT = (
    "CUPS with its filters is not installed: `apt-get install --no-install-recommends cups"
    " cups-client cups-filters` (Debian/Ubuntu; the bench starts its own cupsd)"
)
FILTERS = ("/usr/lib/cups/filter/rastertolabel", "/usr/lib/cups/filter/gstoraster",
           "/usr/lib/cups/filter/pdftopdf")  # fmt: skip
WARMUP_JOBS = 4
POLL_S = 0.02


# --------------------------------------------------------------------------- the bench


@dataclass
class Bench:
    args: argparse.Namespace
    venue: LocalVenue
    cups: PrivateCupsd
    printers: list[str]
    pdfs: list[bytes]
    refs: list[str] = field(default_factory=list)
    tag: str = field(default_factory=lambda: secrets.token_hex(3))
    counter: itertools.count[int] = field(default_factory=itertools.count)

    @property
    def urls(self) -> list[str]:
        return [self.venue.emulator_url(p) for p in self.printers]

    def process_groups(self, system: str) -> dict[str, list[int]]:
        def named(prefix: str) -> list[int]:
            return [m.process.pid for m in self.venue.processes.values()
                    if m.process is not None and m.name.startswith(prefix)]  # fmt: skip

        assert self.cups.process is not None
        own = ({"cupsd": [self.cups.process.pid]} if system == "cups" else
               {"coordinator": named("coordinator"), "agents": named("agent")})  # fmt: skip
        return {**own, "emulators": named("emulator")}

    async def submit_cups(self, session: aiohttp.ClientSession, number: int) -> tuple[str, str]:
        name = f"c{self.tag}-{next(self.counter):06d}"
        status = await print_job(session, self.cups.queue_url(CUPS_CLASS, "classes"), name,
                                 self.pdfs[number % len(self.pdfs)], "application/pdf")  # fmt: skip
        return name, "ok" if status == 0 else f"ipp {status:#x}"

    async def submit_badgeline(
        self, session: aiohttp.ClientSession, number: int
    ) -> tuple[str | None, str]:
        which, key = number % len(self.pdfs), f"zpl-{self.tag}-{next(self.counter)}"
        return await submit_badge(session, self.venue, self.refs[which], self.pdfs[which],
                                  f"A-ZPL{which:05d}", key)  # fmt: skip

    def submitter(self, system: str) -> Submit:
        return self.submit_cups if system == "cups" else self.submit_badgeline

    def set_speed(self, ms_per_label: int) -> None:
        for printer_id in self.printers:
            self.venue.set_speed(printer_id, ms_per_label)

    def reset(self) -> None:
        for url in self.urls:
            http_json("POST", url + "/reset")

    async def settle_cups(self) -> None:
        """No CUPS job left over from a phase may print into the next one."""
        deadline = time.monotonic() + 30
        while self.cups.pending_jobs() and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        if self.cups.pending_jobs():
            print("  (CUPS still had jobs: canceled)")
            self.cups.cancel_all()


async def drain(bench: Bench, system: str, jobs: int, ms_per_label: int) -> Phase:
    """Every job submitted as fast as answered; counted at the emulators until all are out."""
    phase = Phase(system, jobs)
    bench.reset()
    groups = bench.process_groups(system)
    cpu_before = {name: tree_cpu_seconds(pids) for name, pids in groups.items()}
    machine_before = machine_busy_seconds()
    waiter = asyncio.create_task(wait_printed(bench.urls, jobs, bench.args.timeout))
    await submit_all(phase, bench.submitter(system), bench.args.concurrency)
    await waiter
    phase.cpu_s = {name: tree_cpu_seconds(pids) - cpu_before[name]
                   for name, pids in groups.items()}  # fmt: skip
    phase.machine_cpu_s = machine_busy_seconds() - machine_before
    for url in bench.urls:
        rows = http_json("GET", url + "/printed")
        times = sorted(row["at"] for row in rows)
        for row in rows:
            phase.printed[row["job_id"] or f"label-{len(phase.printed)}"] += 1
        phase.print_gap_ms += [(b - a) * 1000 for a, b in itertools.pairwise(times)]
        if times:
            phase.per_printer.append((len(times), times[0], times[-1]))
            phase.last_out = max(phase.last_out, times[-1])
    if system == "cups":
        await bench.settle_cups()
    print(f"  {system:<10} {ms_per_label:>5} ms/label: {jobs} badges in {phase.drain_s:6.2f} s "
          f"({phase.rate:5.2f}/s), {labels_out(phase)} labels out", flush=True)  # fmt: skip
    return phase


async def latency_sample(bench: Bench, system: str, out: Path) -> Sample:
    """One badge (the first PDF) on an idle system: submit to its label out."""
    before = {url: len(http_json("GET", url + "/printed")) for url in bench.urls}
    connector = aiohttp.TCPConnector(limit=1)
    async with aiohttp.ClientSession(connector=connector) as session:
        started = time.time()
        _, status = await bench.submitter(system)(session, 0)
    if status != "ok":
        raise RuntimeError(f"{system}: submitting one badge answered {status}")
    deadline = time.monotonic() + bench.args.timeout
    while time.monotonic() < deadline:
        for url in bench.urls:
            rows = http_json("GET", url + "/printed")
            if len(rows) > before[url]:
                row = rows[before[url]]
                png = Path(str(row["png"])) if row.get("png") else None
                kept = None
                if png is not None and png.exists():
                    kept = out / f"zpl-{system}.png"
                    shutil.copyfile(png, kept)
                if system == "cups":
                    await bench.settle_cups()
                return Sample(system, float(row["at"]) - started, kept)  # type: ignore[arg-type]
        await asyncio.sleep(POLL_S)
    raise RuntimeError(f"{system}: the badge did not come out within {bench.args.timeout} s")


# --------------------------------------------------------------------------- start, stop


def start_everything(root: Path, args: argparse.Namespace) -> Bench:
    printers = [f"printer-z{n}" for n in range(1, args.printers + 1)]
    pdfs = [sample_badge_pdf(f"A-ZPL{n:05d}", f"Attendee {n}", "Side By Side Ltd")
            for n in range(args.distinct_badges)]  # fmt: skip
    venue = LocalVenue(root / "venue", printer_ids=tuple(printers), extra_coordinator_config={
        "venue": "vszpl" + secrets.token_hex(3), "high_water_mark": 100_000})  # fmt: skip
    venue.emulator_args = {p: ["--language", "zpl", "--model", MODEL] for p in printers}
    venue.agent_overrides = {p: {"printer": {"language": "zpl", "model": MODEL}}
                             for p in printers}  # fmt: skip
    cups = PrivateCupsd(root / "cups", free_port())
    bench = Bench(args, venue, cups, printers, pdfs)
    print(f"starting the venue (coordinator, Redis, {len(printers)} ZPL emulators and agents)"
          " and cupsd ...", flush=True)  # fmt: skip
    try:
        venue.start()
        cups.start()
        for printer_id in printers:
            port = venue.printers[printer_id].port
            cups.add_driver_printer(f"cups-{printer_id}", port, CUPS_CLASS, CUPS_DRIVER,
                                    *CUPS_OPTIONS)  # fmt: skip
        cups.enable(CUPS_CLASS)
    except BaseException:
        stop_everything(bench, venue)  # what did start must not outlive a failed start
        raise
    bench.refs = [hashlib.sha256(pdf).hexdigest() + ".pdf" for pdf in pdfs]
    return bench


def stop_everything(bench: Bench | None, venue: LocalVenue | None) -> None:
    if bench is not None:
        bench.cups.stop()
    if venue is not None:
        stop_venue(venue)


# --------------------------------------------------------------------------- run


async def run(args: argparse.Namespace, root: Path, out: Path) -> tuple[Results, bytes]:
    bench: Bench | None = None
    venue: LocalVenue | None = None
    results = Results()
    try:
        bench = start_everything(root, args)
        venue = bench.venue
        for system in ("cups", "badgeline"):  # warm up: filters cached, render workers up
            await drain(bench, system, WARMUP_JOBS, 0)
        for ms, jobs in ((0, args.jobs), (args.slow_ms, args.slow_jobs)):
            bench.set_speed(ms)
            order = ["cups", "badgeline"]
            for round_number in range(args.rounds):
                print(f"{ms} ms/label, round {round_number + 1}: load average "
                      f"{load_average()}", flush=True)  # fmt: skip
                for system in order:
                    phase = await drain(bench, system, jobs, ms)
                    results.drains.setdefault(ms, []).append(phase)
                order.reverse()
        bench.set_speed(0)
        bench.reset()
        print("latency: one badge at a time on idle systems ...", flush=True)
        order = ["cups", "badgeline"]
        for _ in range(args.latency_samples):
            for system in order:
                results.latency.append(await latency_sample(bench, system, out))
            order.reverse()
        for system in ("cups", "badgeline"):
            png = out / f"zpl-{system}.png"
            if png.exists():
                band = 0 if system == "cups" else footer_band()
                results.fits[system] = label_fit(png, bench.pdfs[0], band)
        return results, bench.pdfs[0]
    finally:
        await asyncio.to_thread(stop_everything, bench, venue)


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--jobs", type=int, default=120, help="badges per phase, zero delay")
    parser.add_argument("--slow-jobs", type=int, default=48, help="badges per phase, slow")
    parser.add_argument("--slow-ms", type=int, default=1500, help="the slow printers' ms/label")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, systems alternating")
    parser.add_argument("--printers", type=int, default=4, help="ZPL emulators")
    parser.add_argument("--concurrency", type=int, default=8, help="parallel kiosk clients")
    parser.add_argument("--distinct-badges", type=int, default=20, help="distinct badge PDFs")
    parser.add_argument("--latency-samples", type=int, default=5, help="per system")
    parser.add_argument("--timeout", type=float, default=300, help="per-phase limit in seconds")
    parser.add_argument("--out", type=Path, default=Path("bench-out"),
                        help="where both systems' PNGs of the same badge are saved")  # fmt: skip
    parser.add_argument("--nice", type=int, default=0, help="niceness of all it starts")
    parser.add_argument("--keep", type=Path, help="keep logs and state under DIR")
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse(argv)
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    if missing_tools() or not all(Path(f).exists() for f in FILTERS):
        print(INSTALL_HINT, file=sys.stderr)
        return 2
    print("vs_cups --language zpl: badgeline's ZPL driver beside CUPS's rastertolabel, "
          "same PDFs, same Zebra emulators")  # fmt: skip
    print(f"code: {git_revision()}")
    print("command: " + shlex.join([".venv/bin/python", "bench/vs_cups.py", "--language", "zpl",
                                    *argv]))  # fmt: skip
    print(f"machine: {os.cpu_count()} cores, load average {load_average()}; "
          f"cupsd {cups_version()}")  # fmt: skip
    root = args.keep or Path(tempfile.mkdtemp(prefix="badgeline-vs-cups-zpl-"))
    # cupsd runs its filters and backends as user lp, which must reach the spool below.
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o711)
    args.out.mkdir(parents=True, exist_ok=True)
    try:
        with priority(args.nice) as said:
            print(f"priority: {said}", flush=True)
            results, pdf = asyncio.run(run(args, root, args.out))
    except KeyboardInterrupt:
        return 130
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    report(results, args, pdf)
    print(f"PNGs: {args.out / 'zpl-cups.png'}, {args.out / 'zpl-badgeline.png'}")
    print(f"load average at the end: {load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
