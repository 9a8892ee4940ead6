"""Durability under kill -9 (the short versions of bench/bench_durability.py).

- Redis SIGKILLed under accept load with appendfsync `always`, then started
  again from its AOF: every job a kiosk was answered 201/200 for is there, and
  its idempotency key still names it (invariants 1 and 2, docs/architecture.md).
- The agent process SIGKILLed inside its journal writes (strace injects the
  SIGKILL at the agent's n-th fsync) and at random: every time, the journal
  passes integrity_check, opens without being moved aside and its ack outbox
  matches its rows; at the end every badge that came out had a journaled grant,
  every printed ack the coordinator recorded was journaled first, and the chaos
  checker finds nothing lost and no unexplained duplicate (invariants 5 and 6).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.chaos.harness.power_cuts import PowerCuts
from tests.chaos.harness.redis_kill import redis_kill_round

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


async def test_kill_9_redis_under_load_loses_no_acknowledged_job(tmp_path: Path) -> None:
    # GIVEN a coordinator on a Redis server with appendfsync always, under accept load
    # WHEN the server is SIGKILLed mid-load and restarted from its AOF
    result, figures = await redis_kill_round(
        tmp_path, "always", concurrency=16, warmup_s=1.0, measure_s=2.0, outage_s=1.0, after_s=1.0
    )
    print(figures)
    # THEN the kill really struck under load: requests in flight got no 201
    outage = figures["answers_during_outage"]
    assert sum(count for status, count in outage.items() if status != "201") > 0, figures
    # AND every acknowledged job survived, and its key still names it
    assert result.acknowledged, figures
    assert result.lost == [], figures
    assert result.key_lost == [], figures
    assert result.present_after_restart >= len(result.acknowledged)


async def test_agent_killed_inside_journal_writes_keeps_its_promises(tmp_path: Path) -> None:
    # GIVEN one printer kept busy; WHEN its agent is SIGKILLed 6 times, mostly
    # inside a journal fsync (when strace is installed), and restarted each time
    aimed_share = 0.7 if shutil.which("strace") else 0.0
    if not aimed_share:
        print("strace not installed: every kill lands at a random moment instead")
    result = await PowerCuts(tmp_path, 6, seed=7, aimed_share=aimed_share).run(print)
    print(result.figures())
    # THEN after every kill the journal was intact, opened as is, outbox = owed results
    assert [k.problems for k in result.kills] == [[] for _ in result.kills]
    assert all(k.exit_code == -9 for k in result.kills), [k.exit_code for k in result.kills]
    # AND the ground truth and the coordinator agree with the journal
    assert result.promise_problems == []
    assert not result.settle_problems
    assert result.report is not None
    assert result.report.violations() == dict.fromkeys(result.report.violations(), 0), (
        result.report.text()
    )
    assert result.report.physical_prints > 0
