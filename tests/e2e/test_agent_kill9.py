"""kill -9 an agent again and again while badges flow: nothing is lost, and the
only badges that come out twice are those the agent reported `uncertain`
because it died between the start grant and the printed record.

Ground truth is the emulator's record of what came out; the evidence for each
duplicate is the agent's own journal (granted, never printed, reported
uncertain) and the moment the test killed it.
"""

from __future__ import annotations

import collections
import contextlib
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from badgeline.localvenue import wait_until
from badgeline.samples import sample_badge_pdf
from tests.e2e.conftest import VenueFactory
from tests.e2e.venue import (
    E2EVenue,
    journal_rows,
    prints_by_job,
    submitted_job_id,
    wait_until_printed,
    wait_until_state,
)

PRINTER = "printer-a"
# 12 kills in the suite: about 8 of them land between a grant and its printed
# record (the uncertain window), so both branches of the checks below are taken.
# BADGELINE_E2E_KILLS=40 (or any count) runs a long version (docs/reliability.md).
KILLS = int(os.environ.get("BADGELINE_E2E_KILLS", "12"))
# Fixed so a failure can be replayed; BADGELINE_E2E_KILL_SEED picks another.
KILL_SEED = int(os.environ.get("BADGELINE_E2E_KILL_SEED", "20240917"))
# Most kills land while the agent prints (after its first grant in that life),
# at a random moment of its print cycle; the rest land at a random moment after
# the process starts, which may be during start-up and journal recovery.
MAX_KILL_DELAY_PRINTING_S = 0.6
MAX_KILL_DELAY_STARTING_S = 2.0
SHARE_OF_KILLS_WHILE_STARTING = 0.25
# Jobs kept waiting at the coordinator, so that every life has work.
QUEUED_AT_LEAST = 20


@dataclass
class Life:
    """One agent process: from just before it was spawned to just after it died."""

    started_at: float
    mode: str = ""
    delay_s: float = 0.0
    killed_at: float | None = None
    children: list[int] = field(default_factory=list)

    def holds(self, moment: float) -> bool:
        end = self.killed_at if self.killed_at is not None else float("inf")
        return self.started_at <= moment <= end


class Kiosk:
    """Submits badges for the printer and tops its queue up between kills."""

    def __init__(self, venue: E2EVenue) -> None:
        self.venue = venue
        self.ref = venue.upload_badge(sample_badge_pdf("A-KILL-0001", "Kim Killnine", "SIGKILL"))
        self.accepted: list[str] = []

    def top_up(self) -> None:
        counts = prints_by_job(self.venue)
        waiting = sum(1 for job_id in self.accepted if not counts[job_id])
        for _ in range(max(0, QUEUED_AT_LEAST - waiting)):
            attendee = f"A-K9-{len(self.accepted):05d}"
            answer = self.venue.submit(PRINTER, attendee, self.ref)
            self.accepted.append(submitted_job_id(answer))


def agent_children(venue: E2EVenue) -> list[int]:
    """The running agent's child processes (its badge render worker, multiprocessing's helper)."""
    agent = venue.processes[f"agent-{PRINTER}"].process
    assert agent is not None
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == agent.pid:
                children.append(int(stat.parent.name))
    return children


def gone(pids: list[int]) -> bool:
    return not any(Path(f"/proc/{pid}").exists() for pid in pids)


def granted_since(venue: E2EVenue, moment: float) -> bool:
    return any((row["granted_at"] or 0) >= moment for row in journal_rows(venue, PRINTER))


def kill_at_random(venue: E2EVenue, life: Life, rng: random.Random) -> None:
    """Let the agent reach a random point of its life, then SIGKILL it."""
    if rng.random() < SHARE_OF_KILLS_WHILE_STARTING:
        life.mode, life.delay_s = "after spawn", rng.uniform(0, MAX_KILL_DELAY_STARTING_S)
    else:
        wait_until(lambda: granted_since(venue, life.started_at), 30,
                   "the restarted agent to take a start grant")  # fmt: skip
        life.mode, life.delay_s = "while printing", rng.uniform(0, MAX_KILL_DELAY_PRINTING_S)
    time.sleep(life.delay_s)
    life.children = agent_children(venue)
    venue.kill_agent(PRINTER)
    life.killed_at = time.time()


def uncertain_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [row for row in rows if row["outcome"] == "uncertain"]


def life_of(lives: list[Life], moment: float) -> Life:
    return next(life for life in lives if life.holds(moment))


@pytest.mark.timeout(360)  # ~25 s on a quiet 2-core machine; far more when it is shared
def test_repeated_kill_9s_of_an_agent_lose_nothing_and_duplicate_only_uncertain_prints(
    start_venue: VenueFactory,
) -> None:
    rng = random.Random(KILL_SEED)
    # GIVEN one printer whose agent is busy printing. The coordinator waits 100
    # missed heartbeats before it declares the printer dead, so failover (tested
    # in tests/failover) stays out of this: every reprint here is the agent's. A
    # lease a killed life took but never journaled goes back to the queue after
    # lease_ttl_s; 5 s (not the default 30 s) keeps the last one from holding the
    # test up for half a minute.
    venue = start_venue(start=False, printer_ids=(PRINTER,),
                        extra_coordinator_config={"fail_threshold": 100,
                                                  "lease_ttl_s": 5.0})  # fmt: skip
    lives = [Life(started_at=time.time())]
    venue.start()
    kiosk = Kiosk(venue)

    # WHEN it is killed with SIGKILL again and again at random points, restarted each time
    for _ in range(KILLS):
        kiosk.top_up()
        kill_at_random(venue, lives[-1], rng)
        lives.append(Life(started_at=time.time()))
        venue.start_agent(PRINTER)

    # THEN every accepted job comes out and ends `printed` at the coordinator, and
    # nothing else comes out (every print carries the footer of an accepted job)
    wait_until_printed(venue, kiosk.accepted, timeout_s=90)
    views = wait_until_state(venue, kiosk.accepted, "printed", timeout_s=60)
    counts = prints_by_job(venue)
    assert set(counts) <= set(kiosk.accepted), set(counts) - set(kiosk.accepted)
    rows = journal_rows(venue, PRINTER)
    uncertain_by_job = collections.Counter(row["job_id"] for row in uncertain_rows(rows))
    report(lives, kiosk.accepted, counts, rows)

    # AND a job came out more than once only if the agent reported it uncertain,
    # once per extra copy, and the coordinator flagged it possible_duplicate
    for job_id in kiosk.accepted:
        assert counts[job_id] <= 1 + uncertain_by_job[job_id], (job_id, views[job_id])
        if uncertain_by_job[job_id]:
            assert views[job_id]["possible_duplicate"], views[job_id]
            assert any(entry["from"] == "printing" and entry["to"] == "queued"
                       and "cannot tell whether it printed" in (entry["reason"] or "")
                       for entry in views[job_id]["history"]), views[job_id]["history"]  # fmt: skip
    # AND each uncertain report is a kill between the grant and the printed record:
    # granted in a life that ended in SIGKILL, never journaled printed
    for row in uncertain_rows(rows):
        assert row["granted_at"] is not None and row["printed_at"] is None, row
        life = life_of(lives, row["granted_at"])
        assert life.killed_at is not None and row["granted_at"] <= life.killed_at, (row, life)
    # AND no journaled print was ever reported as anything but printed
    assert all(row["outcome"] == "printed" for row in rows if row["printed_at"] is not None)
    # AND a killed agent leaves no process behind (its render worker exits with it)
    orphans = [pid for life in lives for pid in life.children]
    wait_until(lambda: gone(orphans), 10, f"the killed agents' children {orphans} to exit")


def report(lives: list[Life], accepted: list[str], counts: collections.Counter[str | None],
           rows: list[dict[str, Any]]) -> None:  # fmt: skip
    """The evidence, printed for the record (pytest -s shows it)."""
    kills = [life for life in lives if life.killed_at is not None]
    modes = collections.Counter(life.mode for life in kills)
    duplicates = {job_id: counts[job_id] for job_id in accepted if counts[job_id] > 1}
    print(
        f"\nseed {KILL_SEED}: {len(kills)} kills ({dict(modes)}), {len(accepted)} jobs accepted,"
        f" {sum(counts[job_id] for job_id in accepted)} prints at the emulator"
    )
    for row in uncertain_rows(rows):
        life = life_of(lives, row["granted_at"])
        assert life.killed_at is not None
        print(
            f"  uncertain {row['job_id']} lease {row['lease_id']}: granted"
            f" {row['granted_at'] - life.started_at:.3f} s into a life killed"
            f" {life.killed_at - row['granted_at']:.3f} s later ({life.mode},"
            f" {life.delay_s:.3f} s); emulator prints {counts[row['job_id']]}"
        )
    print(f"  jobs printed twice: {duplicates or 'none'}")
