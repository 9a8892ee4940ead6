"""Time the badge pipeline per badge: check, render, dither, encode, and the whole path.

    .venv/bin/python bench/bench_raster.py [--badges 200] [--width 576] [--cold-starts 5]

A benchmark, not a test: it prints median and p99 milliseconds per stage and
asserts nothing, because timings depend on the machine. The badges are the
demo's sample badges with distinct names and QR codes, generated up front so
that only the agent's work is timed.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

# Run from a checkout without installing: make `badgeline` importable.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from badgeline import samples
from badgeline.badge import (
    WIDTH_DOTS_80MM,
    BadgeRenderWorker,
    badge_to_escpos,
    check_badge_pdf,
    dither_to_1bit,
    encode_escpos,
    job_footer,
    render_grayscale,
)

DISTINCT_BADGES = 20
FIRST_NAMES = ("Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Margaret", "Ken")
COMPANIES = ("Analytical Engines Ltd", "Compilers & Co", "Bletchley Park", "Structured Inc")


def sample_badges(count: int) -> list[bytes]:
    return [
        samples.sample_badge_pdf(
            attendee_id=f"A-{number:05d}",
            name=f"{FIRST_NAMES[number % len(FIRST_NAMES)]} Example-{number}",
            company=COMPANIES[number % len(COMPANIES)],
        )
        for number in range(count)
    ]


def time_each(action: Callable[[int], object], count: int) -> list[float]:
    """Milliseconds for `action(i)`, i in 0..count-1, one timing per call."""
    timings = []
    for index in range(count):
        started = time.perf_counter()
        action(index)
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def percentile(timings: list[float], fraction: float) -> float:
    ordered = sorted(timings)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--badges", type=int, default=200, help="badges per stage (200)")
    parser.add_argument("--width", type=int, default=WIDTH_DOTS_80MM, help="dot width (576)")
    parser.add_argument(
        "--cold-starts", type=int, default=5, help="new render workers timed to a first badge (5)"
    )
    arguments = parser.parse_args()
    count, width = arguments.badges, arguments.width

    badges = sample_badges(DISTINCT_BADGES)
    started = time.perf_counter()
    badge_to_escpos(badges[0], width, job_id="warm-up")
    first_call_ms = (time.perf_counter() - started) * 1000

    def pdf(index: int) -> bytes:
        return badges[index % len(badges)]

    grays = [render_grayscale(pdf(index), width) for index in range(len(badges))]
    dithered = [dither_to_1bit(gray) for gray in grays]
    stages = {
        "check (inside render)": time_each(lambda i: check_badge_pdf(pdf(i)), count),
        "render (check + draw)": time_each(lambda i: render_grayscale(pdf(i), width), count),
        "dither": time_each(lambda i: dither_to_1bit(grays[i % len(grays)]), count),
        "encode": time_each(
            lambda i: encode_escpos(dithered[i % len(dithered)], job_footer(str(i))), count
        ),
        "whole path": time_each(lambda i: badge_to_escpos(pdf(i), width, job_id=str(i)), count),
    }
    with BadgeRenderWorker() as worker:
        worker.badge_to_escpos(pdf(0), width)  # the first request after a spawn warms caches
        stages["whole path, in worker"] = time_each(
            lambda i: worker.badge_to_escpos(pdf(i), width, job_id=str(i)), count
        )

    # What the agent's first badge after an idle spell pays: its render worker
    # exits after render_worker_idle_s and the next badge spawns a new one.
    cold_ms = []
    for index in range(arguments.cold_starts):
        started = time.perf_counter()
        with BadgeRenderWorker() as new_worker:
            new_worker.badge_to_escpos(pdf(index), width, job_id=str(index))
            cold_ms.append((time.perf_counter() - started) * 1000)

    badge_kib = statistics.mean(len(badge) for badge in badges) / 1024
    print(
        f"{count} badges per stage, {width} dots wide, "
        f"{DISTINCT_BADGES} distinct sample badges of ~{badge_kib:.1f} KiB"
    )
    print(f"first badge (loads PDFium): {first_call_ms:.1f} ms")
    if cold_ms:
        print(f"first badge in a new render worker (spawn + imports + render), median of"
              f" {len(cold_ms)}: {statistics.median(cold_ms):.1f} ms"
              f" (min {min(cold_ms):.1f}, max {max(cold_ms):.1f})")  # fmt: skip
    print(f"{'stage':<26}{'median ms':>10}{'p99 ms':>10}")
    for stage, timings in stages.items():
        print(f"{stage:<26}{statistics.median(timings):>10.2f}{percentile(timings, 0.99):>10.2f}")


if __name__ == "__main__":
    main()
