"""A busy fleet, as processes: every badge exactly once, in priority order per printer."""

from __future__ import annotations

import collections
import random

from tests.e2e.venue import (
    E2EVenue,
    printed_on,
    prints_by_job,
    submitted_job_id,
    wait_until_printed,
    wait_until_state,
)

JOBS = 300
ORDER_SEED = 3003  # fixed: which printer and priority each job gets
PRIORITIES = (0, 10, 50, 100, 100, 100, 500)  # mostly default, some VIPs, some late


def test_300_jobs_on_3_printers_print_exactly_once_in_priority_then_arrival_order(
    healthy_fleet: E2EVenue, fleet_badge: tuple[bytes, str]
) -> None:
    venue = healthy_fleet
    _, badge_ref = fleet_badge
    rng = random.Random(ORDER_SEED)
    before = prints_by_job(venue)

    # GIVEN every printer paused, so that the whole queue builds up before anything prints
    for printer_id in venue.printer_ids:
        venue.api("POST", f"/v1/printers/{printer_id}/pause", {})
    # AND 300 jobs naming a printer each, with mixed priorities, accepted in a known order
    accepted: list[tuple[str, str, int]] = []  # (job_id, printer_id, priority) in order
    for number in range(JOBS):
        printer_id, priority = rng.choice(venue.printer_ids), rng.choice(PRIORITIES)
        answer = venue.submit(printer_id, f"A-ORD-{number:04d}", badge_ref, priority=priority)
        assert answer["printer_id"] == printer_id, answer
        accepted.append((submitted_job_id(answer), printer_id, priority))
    assert not set(prints_by_job(venue)) - set(before), "a paused printer printed"

    # WHEN the printers are resumed
    for printer_id in venue.printer_ids:
        venue.api("POST", f"/v1/printers/{printer_id}/resume")
    job_ids = [job_id for job_id, _, _ in accepted]
    wait_until_printed(venue, job_ids, timeout_s=90)
    views = wait_until_state(venue, job_ids, "printed", timeout_s=30)

    # THEN each job came out exactly once, counted at the emulators
    counts = prints_by_job(venue)
    assert {job_id: counts[job_id] for job_id in job_ids if counts[job_id] != 1} == {}
    assert None not in counts, "a badge came out without a readable job footer"
    assert all(view["prints"] == 1 and not view["possible_duplicate"] for view in views.values())
    # AND on the printer it named, lower priority first, then in order of acceptance
    for printer_id in venue.printer_ids:
        ours = [(priority, index, job_id)
                for index, (job_id, named, priority) in enumerate(accepted)
                if named == printer_id]  # fmt: skip
        expected = [job_id for _, _, job_id in sorted(ours)]
        came_out = [row["job_id"] for row in printed_on(venue, printer_id)
                    if row["job_id"] in set(expected)]  # fmt: skip
        assert came_out == expected, f"{printer_id}: print order differs from queue order"
    per_printer = collections.Counter(named for _, named, _ in accepted)
    print(f"\n300 jobs, seed {ORDER_SEED}: per printer {dict(per_printer)}, "
          f"priorities {dict(collections.Counter(p for _, _, p in accepted))}")  # fmt: skip
