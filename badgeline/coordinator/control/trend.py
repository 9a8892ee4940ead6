"""Each printer's recent trend for the dashboard: badges printed per minute and
queue depth, over the last minutes.

A sampler reads the store every few seconds: the tally's printed counter per
printer (it only grows, counted inside the scripts that finish a job) and each
queue's length. A rate is the difference of two readings of that counter, so
every replica computes the same figures from the same Redis; the readings live
in this process only, and a coordinator that has just started shows no rate
until it has read for a quarter of the rate window.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any

from badgeline.coordinator.store import Store


@dataclass(frozen=True)
class TrendShape:
    sample_every_s: float = 5.0
    step_s: float = 30.0  # one sparkline point per step
    steps: int = 20  # ten minutes of trend
    rate_window_s: float = 60.0  # the "badges/min now" figure


@dataclass(frozen=True)
class Reading:
    at_ms: int  # the Redis clock
    printed: dict[str, int]  # printer id -> badges printed so far
    depths: dict[str, int]  # printer id -> jobs waiting in its queue


@dataclass(frozen=True)
class PrinterTrend:
    badges_per_min: float | None  # over the rate window; None until measured
    rates: list[float | None]  # badges/min in each step, oldest first
    depths: list[int | None]  # queue depth at the end of each step

    def to_json(self) -> dict[str, Any]:
        rate = None if self.badges_per_min is None else round(self.badges_per_min, 1)
        return {"badges_per_min": rate, "rates": [_round(r) for r in self.rates],
                "depths": self.depths}  # fmt: skip


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


# The readings a step begins and ends with (None: none taken near then), and the
# steps with the rate window's first and last readings (None: too short a look).
Span = tuple[Reading | None, Reading | None]
Frame = tuple[list[Span], tuple[Reading, Reading] | None]


class FleetTrend:
    def __init__(self, shape: TrendShape | None = None) -> None:
        self.shape = shape or TrendShape()
        self._readings: list[Reading] = []  # oldest first; a few hundred at most
        # Every open page asks every second; the answer changes only with a reading.
        self._trends: dict[str, PrinterTrend] = {}
        self._frame_read: Frame | None = None

    async def sample(self, store: Store) -> None:
        """One reading of the store: four round trips, whatever the fleet's size."""
        printers = await store.printers.known()
        now_ms = await store.printers.now_ms()
        printed = await store.reports.printed_by_printer()
        depths = await store.printers.queue_depths(printers)
        self.add(Reading(now_ms, printed, depths))

    def add(self, reading: Reading) -> None:
        if self._readings and reading.at_ms < self._readings[-1].at_ms:
            self._readings.clear()  # another Redis, another clock: start again
        self._readings.append(reading)
        self._trends.clear()
        self._frame_read = None
        shape = self.shape
        keep_s = max(shape.step_s * (shape.steps + 1), shape.rate_window_s)
        keep_ms = 1000 * (keep_s + shape.sample_every_s)
        first = bisect.bisect_left(self._readings, reading.at_ms - keep_ms, key=lambda r: r.at_ms)
        del self._readings[:first]

    def of(self, printer_id: str) -> PrinterTrend:
        if printer_id not in self._trends:
            self._trends[printer_id] = self._trend(printer_id)
        return self._trends[printer_id]

    def _trend(self, printer_id: str) -> PrinterTrend:
        if not self._readings:
            return PrinterTrend(None, [None] * self.shape.steps, [None] * self.shape.steps)
        steps, window = self._frame()
        rates = [_rate(printer_id, start, end) for start, end in steps]
        depths = [end.depths.get(printer_id) if end is not None else None for _, end in steps]
        now = _rate(printer_id, *window) if window is not None else None
        return PrinterTrend(now, rates, depths)

    def _frame(self) -> Frame:
        """The readings that begin and end each step, and the rate window's first and
        last: the same for every printer, found once per reading."""
        if self._frame_read is None:
            latest = self._readings[-1]
            step_ms = int(self.shape.step_s * 1000)
            ends = [latest.at_ms - step_ms * back for back in range(self.shape.steps - 1, -1, -1)]
            steps = [(self._near(end - step_ms), self._near(end)) for end in ends]
            window_ms = self.shape.rate_window_s * 1000
            first = next(r for r in self._readings if r.at_ms >= latest.at_ms - window_ms)
            # Too short a look is no rate yet.
            window = (first, latest) if latest.at_ms - first.at_ms >= window_ms / 4 else None
            self._frame_read = (steps, window)
        return self._frame_read

    def _near(self, at_ms: int) -> Reading | None:
        """The reading closest to `at_ms`, if one was taken within a sample interval."""
        readings = self._readings
        i = bisect.bisect_left(readings, at_ms, key=lambda r: r.at_ms)
        best = min(readings[max(0, i - 1) : i + 1], key=lambda r: abs(r.at_ms - at_ms))
        close = abs(best.at_ms - at_ms) <= self.shape.sample_every_s * 1000
        return best if close else None


def _rate(printer_id: str, start: Reading | None, end: Reading | None) -> float | None:
    if start is None or end is None or end.at_ms <= start.at_ms:
        return None
    printed = end.printed.get(printer_id, 0) - start.printed.get(printer_id, 0)
    if printed < 0:
        return None  # the counter went back: not a rate
    return printed * 60_000 / (end.at_ms - start.at_ms)
