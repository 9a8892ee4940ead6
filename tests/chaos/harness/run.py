"""One chaos run: start the venue, submit under a seeded fault schedule, settle, check.

Used by tests/chaos (a short schedule) and bench/chaos.py (the long one). Every
run writes `chaos-report.json` in its root: the config and seed, the planned and
the struck faults, every kiosk's ledger and the checker's report.
"""

from __future__ import annotations

import asyncio
import collections
import hashlib
import json
import logging
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from badgeline.samples import sample_badge_pdf
from tests.chaos.harness.checker import TERMINAL, Checker, Report
from tests.chaos.harness.faults import FaultRunner
from tests.chaos.harness.kiosk import Kiosk, Submission, plan_submissions
from tests.chaos.harness.schedule import CI_MIX, FaultEvent, generate
from tests.chaos.harness.venue import ChaosVenue, VenueError

log = logging.getLogger("badgeline.chaos")

QUIET_JOURNAL = ("leased", "granted", "printed", "failed", "uncertain")
FETCH_CONCURRENCY = 16
# A read that fails for any reason but "not found" is tried again: right after a
# Redis restart a replica can answer 503 once per stale connection, and a job
# the checker could not read would be counted as lost.
FETCH_ATTEMPTS = 5
FETCH_RETRY_S = 1.0


@dataclass
class ChaosConfig:
    root: Path
    seed: int
    jobs: int = 300
    agents: int = 3
    kiosks: int = 6
    coordinators: int = 2
    duration_s: float = 40.0  # the fault window; submissions are spread over it
    mix: dict[str, int] = field(default_factory=lambda: dict(CI_MIX))
    settle_timeout_s: float = 120.0
    appendfsync: str = "always"
    slow_with_faults: bool = False  # let slowdowns and jams/paper-outs/offline overlap

    @property
    def printer_ids(self) -> tuple[str, ...]:
        return tuple(f"printer-{chr(ord('a') + n)}" for n in range(self.agents))

    def as_dict(self) -> dict[str, Any]:
        values = asdict(self)
        values["root"] = str(self.root)
        return values


@dataclass
class ChaosResult:
    config: ChaosConfig
    schedule: list[FaultEvent]
    report: Report
    settle_problems: list[str]
    timings: dict[str, float]
    reconcile: dict[str, Any] | None

    @property
    def ok(self) -> bool:
        return self.report.ok and not self.settle_problems

    def text(self) -> str:
        lines = [
            f"chaos run seed={self.config.seed} jobs={self.config.jobs} "
            f"agents={self.config.agents} kiosks={self.config.kiosks} "
            f"coordinators={self.config.coordinators} faults={len(self.schedule)}",
            "  timings (s): " + ", ".join(f"{k}={v:.1f}" for k, v in self.timings.items()),
        ]
        if self.reconcile is not None:
            lines.append(f"  coordinator's own reconcile counts: {self.reconcile.get('counts')}")
        lines += [f"  settle problem: {problem}" for problem in self.settle_problems]
        return "\n".join(lines) + "\n" + self.report.text()


async def run_chaos(config: ChaosConfig) -> ChaosResult:
    config.root.mkdir(parents=True, exist_ok=True)
    venue = ChaosVenue(config.root, config.printer_ids, coordinators=config.coordinators,
                       appendfsync=config.appendfsync, supervise=True)  # fmt: skip
    timings: dict[str, float] = {}
    redriven: dict[str, str] = {}  # shed job id -> redrive outcome
    clock = time.monotonic()
    try:
        await venue.start()
        timings["start"] = time.monotonic() - clock
        clock = time.monotonic()
        submissions, runner, schedule = await _play(venue, config)
        timings["chaos"] = time.monotonic() - clock
        clock = time.monotonic()
        problems = await _settle(venue, config, runner, submissions, redriven)
        # A process that exits on its own under these faults is a defect to look
        # at, even though the supervisor restarted it as systemd would.
        problems += venue.unplanned_exits
        timings["settle"] = time.monotonic() - clock
        clock = time.monotonic()
        report, reconcile = await _check(venue, submissions, runner)
        timings["check"] = time.monotonic() - clock
    finally:
        clock = time.monotonic()
        await venue.stop()
        timings["stop"] = time.monotonic() - clock
    report.redrive_outcomes = collections.Counter(redriven.values())
    result = ChaosResult(config, schedule, report, problems, timings, reconcile)
    _write(config.root / "chaos-report.json", result, submissions)
    return result


async def _play(
    venue: ChaosVenue, config: ChaosConfig
) -> tuple[list[Submission], FaultRunner, list[FaultEvent]]:
    ref = await upload_badge(venue)
    submissions = plan_submissions(config.seed, config.jobs, config.kiosks,
                                   config.printer_ids, ref)  # fmt: skip
    schedule = generate(config.seed, config.duration_s, config.printer_ids,
                        config.coordinators, config.mix, config.slow_with_faults)  # fmt: skip
    runner = FaultRunner(venue, schedule)
    per_kiosk = max(1, -(-config.jobs // config.kiosks))
    give_up_at = time.monotonic() + config.duration_s + config.settle_timeout_s
    kiosks = [
        Kiosk(n, venue.session, [r.url for r in venue.replicas], venue.kiosk_token,
              [s for s in submissions if s.kiosk == n], seed=config.seed,
              pace_s=0.9 * config.duration_s / per_kiosk, give_up_at=give_up_at)
        for n in range(config.kiosks)
    ]  # fmt: skip
    started = asyncio.get_running_loop().time()
    await asyncio.gather(runner.run(started), *(kiosk.run() for kiosk in kiosks))
    return submissions, runner, schedule


async def upload_badge(venue: ChaosVenue) -> str:
    pdf = sample_badge_pdf("C-0001", "Chaos Monkey", "Fault Injection Ltd")
    sha = hashlib.sha256(pdf).hexdigest()
    headers = {"Authorization": f"Bearer {venue.kiosk_token}"}
    url = f"{venue.replicas[0].url}/v1/artifacts/{sha}.pdf"
    async with venue.session.put(url, data=pdf, headers=headers) as answer:
        answer.raise_for_status()
    return f"artifact://{sha}.pdf"


async def _settle(
    venue: ChaosVenue,
    config: ChaosConfig,
    runner: FaultRunner,
    submissions: list[Submission],
    redriven: dict[str, str],
) -> list[str]:
    """Every fault cleared, every printer healthy, every job finished, every journal quiet."""
    problems = await _repair(venue, runner)
    deadline = asyncio.get_running_loop().time() + config.settle_timeout_s
    accepted = {s.job_id for s in submissions if s.job_id is not None}
    steps = [
        (venue.all_printers_healthy, "every printer healthy"),
        (jobs_finished(venue, accepted), "every accepted job printed, failed or canceled"),
        (_redrive_shed(venue, submissions, redriven), "the shed jobs redriven"),
        (lambda: journals_quiet(venue), "every agent's journal without work or owed acks"),
    ]
    for condition, what in steps:
        left = max(1.0, deadline - asyncio.get_running_loop().time())
        try:
            await venue.wait_for(condition, what, timeout_s=left, interval_s=0.5)
        except VenueError as error:
            problems.append(str(error))
    return problems


def _redrive_shed(venue: ChaosVenue, submissions: list[Submission],
                  outcomes: dict[str, str]) -> Any:  # fmt: skip
    """Redrive every job shed at submission: each went through the dedupe gate again
    and its key was since accepted as another job, so each must be `suppressed`
    (invariant 4, docs/architecture.md) and never print; the checker counts any
    that does."""
    shed = sorted({job_id for s in submissions for job_id in s.shed_job_ids})

    async def redrive() -> bool:
        if not shed:
            return True
        try:
            answer = await venue.post_api("/v1/dead-letters/redrive", {"ids": shed})
        except VenueError:
            return False
        outcomes.update({r["job_id"]: r["outcome"] for r in answer["results"]})
        return True

    return redrive


async def _repair(venue: ChaosVenue, runner: FaultRunner) -> list[str]:
    """A fault the runner failed to clear is cleared here, and said so."""
    problems = []
    for record in runner.records:
        if record.error:
            problems.append(f"fault #{record.event.number} {record.event.kind}: {record.error}")
    for printer_id in venue.printer_ids:
        venue.proxies[printer_id].heal()
        await venue.set_fault(printer_id, "none")
        await venue.set_speed(printer_id, 0)
        if not venue.running(f"agent-{printer_id}"):
            problems.append(f"agent-{printer_id} was not running after the schedule")
            venue.start_agent(printer_id)
    for replica in venue.replicas:
        if not venue.running(replica.name):
            problems.append(f"{replica.name} was not running after the schedule")
            venue.start_coordinator(replica.name)
    return problems


def jobs_finished(venue: ChaosVenue, job_ids: set[str]) -> Any:
    pending = set(job_ids)

    async def check() -> bool:
        views = await fetch_jobs(venue, sorted(pending))
        pending.difference_update(j for j, view in views.items() if view["state"] in TERMINAL)
        return not pending

    return check


async def journals_quiet(venue: ChaosVenue) -> bool:
    for printer_id in venue.printer_ids:
        try:
            status = await venue.get(venue.agent_status_url(printer_id))
        except Exception:
            return False
        journal = status.get("journal") or {}
        if any(journal.get(state, 0) for state in QUIET_JOURNAL):
            return False
    return True


async def fetch_jobs(venue: ChaosVenue, job_ids: list[str]) -> dict[str, dict[str, Any]]:
    views: dict[str, dict[str, Any]] = {}
    gate = asyncio.Semaphore(FETCH_CONCURRENCY)

    async def one(job_id: str) -> None:
        # Not found, or unreadable after every attempt: absent from the answer.
        for attempt in range(FETCH_ATTEMPTS):
            if attempt:
                await asyncio.sleep(FETCH_RETRY_S)
            async with gate:
                try:
                    views[job_id] = await venue.api(f"/v1/jobs/{job_id}")
                    return
                except VenueError as error:
                    if error.not_found:
                        return

    await asyncio.gather(*(one(job_id) for job_id in job_ids))
    return views


async def _check(venue: ChaosVenue, submissions: list[Submission],
                 runner: FaultRunner) -> tuple[Report, dict[str, Any] | None]:  # fmt: skip
    accepted = sorted({s.job_id for s in submissions if s.job_id is not None})
    jobs = await fetch_jobs(venue, accepted)
    rows = await venue.printed_rows()
    replica_of = {p: venue.assignment[p].name for p in venue.printer_ids}
    discards = emulator_discards(venue.root / "logs")
    checker = Checker(submissions, jobs, rows, runner.records, replica_of, discards)
    report = checker.check(time.time())
    try:
        reconcile = await venue.api("/v1/reconcile?deadline_s=0")
    except VenueError:
        reconcile = None
    return report, reconcile


DISCARD_LINE = re.compile(r"page for \[([^\]]*)\] not printed: (.*)$")


def emulator_discards(log_dir: Path) -> dict[str, list[str]]:
    """job id -> the reasons emulators gave for throwing a page of it away."""
    found: dict[str, list[str]] = collections.defaultdict(list)
    for log_path in sorted(log_dir.glob("emulator-*.log")):
        printer_id = log_path.stem.removeprefix("emulator-")
        for line in log_path.read_text(errors="replace").splitlines():
            match = DISCARD_LINE.search(line)
            if match is None:
                continue
            for job_id in re.findall(r"'([^']+)'", match.group(1)):
                found[job_id].append(f"{printer_id}: {match.group(2)} ({line[:23]})")
    return dict(found)


def _write(path: Path, result: ChaosResult, submissions: list[Submission]) -> None:
    document = {
        "config": result.config.as_dict(),
        "schedule": [event.as_dict() for event in result.schedule],
        "timings_s": result.timings,
        "settle_problems": result.settle_problems,
        "reconcile": result.reconcile,
        "report": result.report.as_dict(),
        "ledger": [s.as_dict() for s in submissions],
    }
    path.write_text(json.dumps(document, indent=1, default=str))
