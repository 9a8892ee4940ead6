"""The fault schedule: which fault strikes what, when, and for how long, drawn from a seed.

A schedule is a pure function of (seed, duration, printers, coordinators, mix,
slow_with_faults): the same seed gives the same plan, so a failing run can be
replayed. Faults of one kind on one target never overlap (clearing one would
clear the other); faults on different targets, or of different kinds, overlap
freely, except that a slowed printer is jammed, emptied or taken offline only
when `slow_with_faults` is set (bench/chaos.py --slow-with-faults). There the
agent tells a slow printer from a silent one and confirms a badge only once the
printer answers for it, so the badges a fault clears from a slow printer's
buffer are reprinted, flagged possible_duplicate, not lost
(tests/chaos/test_known_losses.py keeps the scenario; docs/reliability.md,
"Known losses"). The suite's run keeps the two apart, as by default.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

# kind -> (shortest, longest) seconds a fault lasts before it is cleared
DURATIONS: dict[str, tuple[float, float]] = {
    "agent_kill": (0.5, 4.0),  # kill -9 the agent, start it again after this long
    "coordinator_kill": (0.5, 4.0),  # kill -9 one replica, start it again on its port
    "redis_kill": (0.5, 3.0),  # kill -9 the Redis server, start it again from its AOF
    "link_cut": (1.0, 8.0),  # agent <-> coordinator proxy refuses and resets
    "jam": (1.0, 6.0),  # emulator faults, cleared back to `none`
    "paper_out": (1.0, 6.0),
    "offline": (1.0, 6.0),
    "slow": (2.0, 8.0),  # emulator prints at `SLOW_MS` ms per badge
}
PRINTER_FAULTS = ("jam", "paper_out", "offline")
SLOW_MS = (200, 1500)
KINDS = tuple(DURATIONS)

# What one run of the CI test throws at the venue (~10 faults).
CI_MIX: dict[str, int] = {
    "agent_kill": 2, "coordinator_kill": 1, "redis_kill": 1, "link_cut": 2,
    "jam": 1, "paper_out": 1, "offline": 1, "slow": 1,
}  # fmt: skip


@dataclass(frozen=True)
class FaultEvent:
    number: int
    kind: str
    target: str  # a printer id, "coordinator-<n>", or "redis"
    at_s: float  # seconds after the schedule starts
    duration_s: float
    ms_per_badge: int = 0  # for `slow`
    slow_with_faults: bool = False

    @property
    def resource(self) -> str:
        """Faults that share a resource never overlap."""
        if self.kind in PRINTER_FAULTS or (self.kind == "slow" and not self.slow_with_faults):
            return f"printer-fault:{self.target}"
        if self.kind == "coordinator_kill":
            return "coordinators"  # one replica down at a time: the other serves the venue
        return f"{self.kind}:{self.target}"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def mix_for(total: int, rng: random.Random) -> dict[str, int]:
    """`total` faults spread over every kind, at least one of each when total allows."""
    counts = dict.fromkeys(KINDS, 0)
    for index in range(total):
        kind = KINDS[index] if index < len(KINDS) else rng.choice(KINDS)
        counts[kind] += 1
    return counts


def generate(
    seed: int,
    duration_s: float,
    printers: Sequence[str],
    coordinators: int,
    mix: Mapping[str, int],
    slow_with_faults: bool = False,
) -> list[FaultEvent]:
    """The plan: every fault starts within the first 90 % of `duration_s`."""
    rng = random.Random(seed)
    busy: dict[str, list[tuple[float, float]]] = {}
    events: list[FaultEvent] = []
    for kind in KINDS:
        for _ in range(mix.get(kind, 0)):
            event = _place(rng, kind, len(events), duration_s, printers, coordinators, busy,
                           slow_with_faults)  # fmt: skip
            if event is not None:
                events.append(event)
    events.sort(key=lambda event: event.at_s)
    return [_renumber(event, n) for n, event in enumerate(events, 1)]


def _place(
    rng: random.Random,
    kind: str,
    number: int,
    duration_s: float,
    printers: Sequence[str],
    coordinators: int,
    busy: dict[str, list[tuple[float, float]]],
    slow_with_faults: bool,
) -> FaultEvent | None:
    shortest, longest = DURATIONS[kind]
    for _attempt in range(50):
        event = FaultEvent(
            number=number, kind=kind, target=_target(rng, kind, printers, coordinators),
            at_s=round(rng.uniform(0.02, 0.9) * duration_s, 2),
            duration_s=round(rng.uniform(shortest, longest), 2),
            ms_per_badge=rng.randint(*SLOW_MS) if kind == "slow" else 0,
            slow_with_faults=slow_with_faults,
        )  # fmt: skip
        window = (event.at_s, event.at_s + event.duration_s)
        taken = busy.setdefault(event.resource, [])
        if all(window[1] < start or window[0] > end for start, end in taken):
            taken.append(window)
            return event
    return None  # no room left for this kind on any target: the plan says so by omission


def _target(rng: random.Random, kind: str, printers: Sequence[str], coordinators: int) -> str:
    if kind == "redis_kill":
        return "redis"
    if kind == "coordinator_kill":
        return f"coordinator-{rng.randrange(coordinators) + 1}"
    return rng.choice(list(printers))


def _renumber(event: FaultEvent, number: int) -> FaultEvent:
    return dataclasses.replace(event, number=number)
