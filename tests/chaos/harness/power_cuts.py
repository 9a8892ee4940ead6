"""Durability of the agent: its process killed in the middle of its journal writes.

`PowerCuts`: one printer, a steady flow of jobs, and the agent process killed
over and over. An *aimed* kill has `strace` deliver SIGKILL as the agent enters
its n-th fsync/fdatasync after attaching: the agent's only fsyncs are SQLite's,
so each aimed kill lands inside a journal commit or checkpoint (some aimed at
start-up land in open and recovery). A *random* kill lands wherever. After each
kill, before the agent starts again, the journal must pass
`PRAGMA integrity_check`, open without being moved aside, and have an ack outbox
that matches its rows. At the end the journal is laid beside the ground truth:
every badge that came out has a journaled grant (invariant 5 of
docs/architecture.md), every printed ack the coordinator recorded is journaled
`printed` (invariant 6), and the chaos checker finds nothing lost and no
unexplained duplicate.

SIGKILL ends the process, not the machine: written pages stay in the kernel's
cache. These runs prove crash consistency; surviving real power loss rests on
fsync (SQLite synchronous=FULL). The Redis half is redis_kill.py.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import json
import random
import re
import shutil
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from badgeline.agent.journal import Journal, JournalSettings
from tests.chaos.harness.checker import Checker, Report
from tests.chaos.harness.faults import FaultRecord
from tests.chaos.harness.kiosk import Kiosk, Submission
from tests.chaos.harness.run import (
    emulator_discards,
    fetch_jobs,
    jobs_finished,
    journals_quiet,
    upload_badge,
)
from tests.chaos.harness.schedule import FaultEvent
from tests.chaos.harness.venue import ChaosVenue, VenueError

RESULT_STATES = ("printed", "failed", "uncertain")


@dataclass
class KillCheck:
    number: int
    mode: str  # aimed-start | aimed-steady | random | fallback (strace did not fire in time)
    detail: str
    exit_code: int | None
    journal_exists: bool = True
    integrity: str = "ok"
    moved_aside: str | None = None
    counts: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def mid_print(self) -> bool:
        """Killed between a journaled grant and its result."""
        return self.counts.get("granted", 0) > 0


@dataclass
class PowerCutResult:
    kills: list[KillCheck] = field(default_factory=list)
    promise_problems: list[str] = field(default_factory=list)
    report: Report | None = None
    settle_problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        journal_ok = all(not k.problems for k in self.kills)
        report_ok = self.report is not None and self.report.ok
        return journal_ok and report_ok and not self.promise_problems and not self.settle_problems

    def figures(self) -> dict[str, Any]:
        modes = collections.Counter(k.mode for k in self.kills)
        return {
            "kills": len(self.kills),
            "by_mode": dict(modes),
            "killed_by_sigkill": sum(1 for k in self.kills if k.exit_code == -9),
            "killed_mid_print": sum(1 for k in self.kills if k.mid_print),
            "journal_opened_and_consistent": sum(1 for k in self.kills if not k.problems),
            "journal_problems": [f"#{k.number}: {p}" for k in self.kills for p in k.problems],
            "promise_problems": self.promise_problems[:20],
            "settle_problems": self.settle_problems,
            "checker_violations": self.report.violations() if self.report else None,
            "checker_figures": self.report.figures() if self.report else None,
        }


async def check_journal(path: Path, check: KillCheck) -> None:
    """What a restarted agent would find: intact, not moved aside, outbox = owed results."""
    if not path.exists():
        check.journal_exists = False
        return
    check.integrity = await asyncio.to_thread(_integrity, path)
    if check.integrity != "ok":
        check.problems.append(f"integrity_check: {check.integrity}")
    journal = await Journal.open(JournalSettings(path=path))
    try:
        if journal.moved_aside is not None:
            check.moved_aside = str(journal.moved_aside)
            check.problems.append(f"journal moved aside to {journal.moved_aside}")
        check.counts = await journal.counts()
        pending = await journal.pending_acks()
        owed = sum(check.counts[state] for state in RESULT_STATES)
        if len(pending) != owed:
            check.problems.append(f"{len(pending)} acks in the outbox for {owed} owed results")
        for ack in pending:
            entry = await journal.get(ack.job_id, ack.lease_id)
            if entry is None or str(entry.state) != str(ack.result):
                check.problems.append(f"outbox {ack.job_id} {ack.lease_id} {ack.result}: {entry}")
    finally:
        await journal.close()
    twice = await asyncio.to_thread(_printed_twice_here, path)
    check.problems += [f"{job_id} journaled printed {n} times on one printer"
                       for job_id, n in twice]  # fmt: skip


def _integrity(path: Path) -> str:
    # A plain connection, before Journal.open: its own check must not hide damage.
    connection = sqlite3.connect(path)
    try:
        rows = connection.execute("PRAGMA integrity_check").fetchall()
    finally:
        connection.close()
    return "ok" if rows == [("ok",)] else "; ".join(str(row[0]) for row in rows[:5])


def _printed_twice_here(path: Path) -> list[tuple[str, int]]:
    connection = sqlite3.connect(path)
    try:
        rows = connection.execute(
            "SELECT job_id, COUNT(*) FROM jobs WHERE outcome = 'printed'"
            " GROUP BY job_id HAVING COUNT(*) > 1"
        ).fetchall()
    finally:
        connection.close()
    return [(str(job_id), int(count)) for job_id, count in rows]


def _journal_rows(path: Path) -> list[dict[str, Any]]:
    connection = sqlite3.connect(path)
    connection.row_factory = sqlite3.Row
    try:
        return [dict(row) for row in connection.execute("SELECT * FROM jobs")]
    finally:
        connection.close()


class PowerCuts:
    """The agent of one printer, killed `kills` times while a feeder keeps it busy."""

    PRINTER = "printer-a"
    QUEUE_LOW, QUEUE_HIGH = 4, 16

    def __init__(self, root: Path, kills: int, *, seed: int, aimed_share: float = 1.0) -> None:
        self.root = root
        self.kills = kills
        self.rng = random.Random(seed)
        self.aimed_share = aimed_share if shutil.which("strace") else 0.0
        # recover_after_healthy 1: a restarted agent is back at work after one heartbeat
        self.venue = ChaosVenue(root, (self.PRINTER,), coordinators=1,
                                coordinator_settings={"high_water_mark": 100_000,
                                                      "recover_after_healthy": 1})  # fmt: skip
        self.submissions: list[Submission] = []
        self.faults: list[FaultRecord] = []
        self.result = PowerCutResult()
        self.stop_feeding = asyncio.Event()

    @property
    def journal_path(self) -> Path:
        return self.root / "agents" / self.PRINTER / "journal.sqlite3"

    async def run(self, progress: Any = None) -> PowerCutResult:
        await self.venue.start()
        try:
            feeder = asyncio.create_task(self._feed(await upload_badge(self.venue)))
            for number in range(1, self.kills + 1):
                check = await self._kill_once(number)
                await check_journal(self.journal_path, check)
                self.result.kills.append(check)
                self.faults[-1].cleared_at = time.time()
                self.venue.start_agent(self.PRINTER)
                if progress is not None:
                    progress(check)
            self.stop_feeding.set()
            await feeder
            await self._settle_and_check()
        finally:
            self.stop_feeding.set()
            await self.venue.stop()
        self._write(self.root / "power-cuts-report.json")
        return self.result

    def _write(self, path: Path) -> None:
        document = {
            "figures": self.result.figures(),
            "kills": [dataclasses.asdict(kill) for kill in self.result.kills],
            "report": self.result.report.as_dict() if self.result.report else None,
            "ledger": [s.as_dict() for s in self.submissions],
        }
        path.write_text(json.dumps(document, indent=1, default=str))

    async def _feed(self, ref: str) -> None:
        """Keep between QUEUE_LOW and QUEUE_HIGH accepted jobs that have not come out yet."""
        kiosk = Kiosk(0, self.venue.session, [r.url for r in self.venue.replicas],
                      self.venue.kiosk_token, [], seed=0, pace_s=0,
                      give_up_at=time.monotonic() + 3600)  # fmt: skip
        while not self.stop_feeding.is_set():
            waiting = await self._not_out_yet()
            if waiting is not None and waiting < self.QUEUE_LOW:
                for _ in range(self.QUEUE_HIGH - waiting):
                    submission = self._submission(ref)
                    await kiosk.settle(submission)
                    self.submissions.append(submission)
            await asyncio.sleep(0.2)

    def _submission(self, ref: str) -> Submission:
        n = len(self.submissions)
        body = {"attendee_id": f"att-cut-{n:05d}", "badge_pdf_ref": ref,
                "printer_target": self.PRINTER, "priority": 100,
                "idempotency_key": f"power-cut-{n:05d}-{self.rng.getrandbits(32):08x}"}  # fmt: skip
        return Submission(kiosk=0, body=body)

    async def _not_out_yet(self) -> int | None:
        try:
            out = {row["job_id"] for row in await self.venue.printed_rows()}
        except (aiohttp.ClientError, TimeoutError):
            return None
        return sum(1 for s in self.submissions if s.job_id is not None and s.job_id not in out)

    async def _kill_once(self, number: int) -> KillCheck:
        process = self.venue.processes[f"agent-{self.PRINTER}"]
        assert process.process is not None
        aimed = self.rng.random() < self.aimed_share
        early = aimed and self.rng.random() < 0.25
        if not early:
            await self._wait_printing()
        if aimed:
            nth = self.rng.randint(1, 4 if early else 12)
            mode = await self._aimed_kill(process.process.pid, nth)
            mode_name, detail = (f"aimed-{'start' if early else 'steady'}", f"fsync #{nth}")
            if mode == "fallback":
                mode_name = "fallback"
        else:
            delay = self.rng.uniform(0.0, 0.6)
            await asyncio.sleep(delay)
            mode_name, detail = "random", f"{delay:.3f} s into steady printing"
        # when the agent died (an aimed kill: strace exits just after it), for the checker
        event = FaultEvent(number, "agent_kill", self.PRINTER, 0.0, 0.0)
        self.faults.append(FaultRecord(event, struck_at=time.time()))
        process.kill()  # a no-op if strace's SIGKILL already ended it; reaps it either way
        return KillCheck(number, mode_name, detail, process.process.returncode)

    async def _wait_printing(self) -> None:
        """Until the (re)started agent has printed a badge: it is in steady state."""
        before = len(await self.venue.printed_rows())

        async def printed_more() -> bool:
            return len(await self.venue.printed_rows()) > before

        with contextlib.suppress(VenueError):
            await self.venue.wait_for(printed_more, "a badge from the agent", 60, 0.1)

    async def _aimed_kill(self, pid: int, nth: int) -> str:
        """strace delivers SIGKILL as the agent enters its nth fsync/fdatasync."""
        tracer = await asyncio.create_subprocess_exec(
            "strace", "-f", "-qq", "-o", "/dev/null", "-e", "trace=fsync,fdatasync",
            "-e", f"inject=fsync,fdatasync:signal=SIGKILL:when={nth}", "-p", str(pid),
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        try:
            await asyncio.wait_for(tracer.wait(), 30)
            return "aimed"
        except TimeoutError:
            tracer.kill()
            await tracer.wait()
            return "fallback"

    async def _settle_and_check(self) -> None:
        venue = self.venue
        job_ids = {s.job_id for s in self.submissions if s.job_id is not None}
        for condition, what in [(venue.all_printers_healthy, "the printer healthy"),
                                (jobs_finished(venue, job_ids), "every job finished"),
                                (lambda: journals_quiet(venue), "the journal quiet")]:  # fmt: skip
            try:
                await venue.wait_for(condition, what, 120, 0.5)
            except VenueError as error:
                self.result.settle_problems.append(str(error))
        jobs = await fetch_jobs(venue, sorted(job_ids))
        rows = await venue.printed_rows()
        discards = emulator_discards(venue.root / "logs")
        checker = Checker(self.submissions, jobs, rows, self.faults,
                          {self.PRINTER: "coordinator-1"}, discards)  # fmt: skip
        self.result.report = checker.check(time.time())
        journal = await asyncio.to_thread(_journal_rows, self.journal_path)
        self.result.promise_problems = promises_broken(journal, rows, jobs, self.PRINTER)


PRINTED_BY = re.compile(r"printed by (\S+) under (\S+)")


def promises_broken(journal: list[dict[str, Any]], printed_rows: list[dict[str, Any]],
                    jobs: dict[str, dict[str, Any]], printer_id: str) -> list[str]:  # fmt: skip
    """Ground truth and the coordinator's record against the journal.

    Every badge that came out has a journaled grant (bytes only after the grant is
    journaled), and every printed ack the coordinator recorded from this printer is
    journaled `printed` under that lease (the result is journaled before the ack).
    """
    problems = []
    granted = {row["job_id"] for row in journal if row["granted_at"] is not None}
    printed = {(row["job_id"], row["lease_id"]) for row in journal if row["outcome"] == "printed"}
    for row in printed_rows:
        if row["job_id"] not in granted:
            problems.append(f"{row['job_id']} came out with no journaled grant")
    for job_id, view in jobs.items():
        for entry in view["history"]:
            match = PRINTED_BY.search(entry.get("reason") or "")
            if entry["to"] != "printed" or match is None or match.group(1) != printer_id:
                continue
            if (job_id, match.group(2)) not in printed:
                problems.append(f"{job_id}: ack printed under {match.group(2)} not journaled")
    return problems
