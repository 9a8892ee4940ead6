"""The reads behind the operator reports: the census of live jobs, the tallies,
alert events and the venue's problem counts.

Nothing here scans the venue's keys. Live jobs come from one atomic read of
the indexes they sit in (census-9.lua); finished jobs are counted as they
finish, inside the script that finishes them (scripts/includes/tally.lua).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Literal

from badgeline.coordinator.store.records import Records, text
from badgeline.protocol.states import TERMINAL_STATES

# Most live jobs one census returns: printers x high-water mark is the normal
# ceiling; past this the report says `truncated` rather than stall Redis.
CENSUS_LIMIT = 20_000


def event_digest(raw: str | bytes) -> str:
    """The first 16 hex digits of an event's SHA-1, as list_after-1.lua compares them."""
    return hashlib.sha1(raw if isinstance(raw, bytes) else raw.encode()).hexdigest()[:16]


StatsDimension = Literal["printer", "hour", "source"]


@dataclass(frozen=True)
class CensusJob:
    job_id: str
    state: str
    created_ms: int
    updated_ms: int
    printer_id: str
    attendee_id: str
    possible_duplicate: bool
    prints: int
    printed_by: str
    accepted: bool

    @property
    def live(self) -> bool:
        return self.state not in TERMINAL_STATES

    def brief(self, now_ms: int) -> dict[str, Any]:
        return {"job_id": self.job_id, "state": self.state, "attendee_id": self.attendee_id,
                "printer_id": self.printer_id, "age_s": (now_ms - self.created_ms) / 1000,
                "prints": self.prints}  # fmt: skip


@dataclass(frozen=True)
class Census:
    now_ms: int
    truncated: bool
    totals: dict[str, int]
    jobs: list[CensusJob]


@dataclass(frozen=True)
class ProblemCounts:
    parked: int
    dead_letters: int
    printed_twice: int


@dataclass(frozen=True)
class Tallies:
    totals: dict[str, int]
    by_dimension: dict[str, int]
    failure_reasons: dict[str, int]


@dataclass(frozen=True)
class PrinterCounters:
    """The venue's counters behind /metrics: every one only goes up. `by_printer` maps
    (event, printer_id) to a count: printed and failed (attempts) from the reports,
    and the events of `VenueKeys.stats_printer_events`."""

    totals: dict[str, int]
    by_printer: dict[tuple[str, str], int]
    printed_twice: int


def _counts(raw: dict[Any, Any]) -> dict[str, int]:
    return {text(key): int(value) for key, value in raw.items()}


class ReportQueries(Records):
    async def census(self, held_job_ids: list[str]) -> Census:
        """Every live job, and the jobs held for an operator by a failover
        (`held_job_ids`: they sit in no index, their decisions name them)."""
        k = self.keys
        reply = await self._run(
            "census",
            [k.printers, k.leases, k.retry, k.parked, k.dead_letters, k.held, k.stats_totals,
             k.possible_duplicates, k.printed_twice],
            [k.prefix, json.dumps(held_job_ids), CENSUS_LIMIT],
        )  # fmt: skip
        raw = json.loads(reply)
        # cjson writes an empty Lua table as {}, not [].
        jobs = [CensusJob(*row) for row in (raw["jobs"] or [])]
        return Census(int(raw["now_ms"]), bool(raw["truncated"]), dict(raw["totals"] or {}), jobs)

    async def problem_counts(self) -> ProblemCounts:
        k = self.keys
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.zcard(k.parked)
            pipe.zcard(k.dead_letters)
            pipe.scard(k.printed_twice)
            parked, dead_letters, printed_twice = await pipe.execute()
        return ProblemCounts(int(parked), int(dead_letters), int(printed_twice))

    async def alert_event_page(
        self, after: str | None, count: int
    ) -> list[tuple[str, dict[str, Any]]]:
        """Up to `count` (digest, event), newest first, after the event whose digest
        is `after` (None: from the newest). The digest names an event in a cursor."""
        raws = await self._run("list_after", [self.keys.alert_events],
                               ["sha1", after or "", count])  # fmt: skip
        return [(event_digest(raw), json.loads(raw)) for raw in raws]

    async def tallies(self, by: StatsDimension) -> Tallies:
        """The finished-job counters: totals, one dimension's, and failures by reason."""
        k = self.keys
        dimension = {"printer": k.stats_by_printer, "hour": k.stats_by_hour,
                     "source": k.stats_by_source}[by]  # fmt: skip
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.hgetall(k.stats_totals)
            pipe.hgetall(dimension)
            pipe.hgetall(k.failure_reasons)
            totals, by_dimension, reasons = (_counts(r) for r in await pipe.execute())
        return Tallies(totals, by_dimension, reasons)

    async def counters(self) -> PrinterCounters:
        """The monotonic counts /metrics exports, in one atomic read."""
        k = self.keys
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.hgetall(k.stats_totals)
            pipe.hgetall(k.stats_by_printer)
            pipe.hgetall(k.stats_printer_events)
            pipe.scard(k.printed_twice)
            totals, reports, events, printed_twice = await pipe.execute()
        by_printer: dict[tuple[str, str], int] = {}
        for field, count in (_counts(reports) | _counts(events)).items():
            event, _, printer_id = field.partition("|")
            by_printer[(event, printer_id)] = count
        return PrinterCounters(_counts(totals), by_printer, int(printed_twice))

    async def printed_by_printer(self) -> dict[str, int]:
        """Badges printed so far on each printer: the tally's `printed|<printer>`
        counters, which only grow (the dashboard's rates are their differences)."""
        counts = _counts(await self._redis.hgetall(self.keys.stats_by_printer))
        prefix = "printed|"
        return {key.removeprefix(prefix): n for key, n in counts.items() if key.startswith(prefix)}
