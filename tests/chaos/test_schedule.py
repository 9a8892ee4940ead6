"""The fault schedule is a function of its seed, and never overlaps a fault with
another of the same resource (clearing one would clear the other)."""

from __future__ import annotations

import itertools
import random

from tests.chaos.harness.schedule import (
    CI_MIX,
    KINDS,
    PRINTER_FAULTS,
    FaultEvent,
    generate,
    mix_for,
)

PRINTERS = ("printer-a", "printer-b", "printer-c")


def test_same_seed_same_schedule_other_seed_other_schedule() -> None:
    first = generate(42, 60, PRINTERS, 2, CI_MIX)
    assert first == generate(42, 60, PRINTERS, 2, CI_MIX)
    assert first != generate(43, 60, PRINTERS, 2, CI_MIX)


def test_the_ci_mix_is_placed_in_full_within_the_window() -> None:
    for seed in range(50):
        schedule = generate(seed, 40, PRINTERS, 2, CI_MIX)
        kinds = [event.kind for event in schedule]
        assert {kind: kinds.count(kind) for kind in CI_MIX} == CI_MIX
        assert all(0 < event.at_s <= 0.9 * 40 for event in schedule)
        assert [event.number for event in schedule] == list(range(1, len(schedule) + 1))
        assert [event.at_s for event in schedule] == sorted(event.at_s for event in schedule)


def test_faults_on_one_resource_never_overlap() -> None:
    for seed in range(50):
        schedule = generate(seed, 120, PRINTERS, 2, mix_for(40, random.Random(seed)))
        by_resource: dict[str, list[tuple[float, float]]] = {}
        for event in schedule:
            by_resource.setdefault(event.resource, []).append(
                (event.at_s, event.at_s + event.duration_s)
            )
        for windows in by_resource.values():
            windows.sort()
            for (_, end), (start, _) in itertools.pairwise(windows):
                assert end < start


def test_targets_fit_the_kind() -> None:
    schedule = generate(7, 200, PRINTERS, 2, mix_for(60, random.Random(7)))
    assert {event.kind for event in schedule} == set(KINDS)
    for event in schedule:
        if event.kind == "redis_kill":
            assert event.target == "redis"
        elif event.kind == "coordinator_kill":
            assert event.target in ("coordinator-1", "coordinator-2")
        else:
            assert event.target in PRINTERS
        assert (event.ms_per_badge > 0) == (event.kind == "slow")


def test_a_slowed_printer_is_faulted_only_when_asked() -> None:
    def overlaps(schedule: list[FaultEvent]) -> int:
        slow = [e for e in schedule if e.kind == "slow"]
        faults = [e for e in schedule if e.kind in PRINTER_FAULTS]
        return sum(
            1 for s in slow for f in faults
            if s.target == f.target and s.at_s < f.at_s + f.duration_s
            and f.at_s < s.at_s + s.duration_s
        )  # fmt: skip

    mix = {"slow": 6, "jam": 4, "paper_out": 4, "offline": 4}
    plans = [generate(seed, 60, PRINTERS[:1], 2, mix) for seed in range(20)]
    assert sum(overlaps(plan) for plan in plans) == 0
    plans = [generate(seed, 60, PRINTERS[:1], 2, mix, slow_with_faults=True)
             for seed in range(20)]  # fmt: skip
    assert sum(overlaps(plan) for plan in plans) > 0
