"""Usage statistics (`badgeline stats`, docs/runbook.md "Statistics"): badges by
printer, by hour and by source kiosk, the reprint rate and failure reasons,
counted as things happen."""

from __future__ import annotations

import time

from tests.helpers import wait_for
from tests.ops.venue import PlayedAgent, Venue


async def _print_until(agent: PlayedAgent, job_ids: set[str]) -> bool:
    await agent.print_next()
    return job_ids <= set(agent.printed)


async def test_stats_count_badges_by_printer_hour_and_source(venue: Venue) -> None:
    # GIVEN two badges printed on printer-a (one after a failed attempt),
    # one on printer-b, and one reprint
    a, b = venue.agent("printer-a"), venue.agent("printer-b")
    await a.heartbeat()
    await b.heartbeat()
    first, second = await venue.submit("printer-a", 2)
    (third,) = await venue.submit("printer-b")
    leased = (await a.lease())[0]
    await a.start(leased)
    await a.ack(leased, "failed", error="paper jam")
    await venue.ops("POST", f"/v1/jobs/{second}/cancel")
    assert await b.print_next() == third
    (second,) = await venue.submit("printer-a")
    # (the failed job comes back once its backoff is over)
    await wait_for(lambda: _print_until(a, {first, second}))
    await venue.ops("POST", f"/v1/jobs/{third}/reprint", {"reason": "smudged"})
    assert await b.print_next() is not None

    # WHEN the operator asks for each grouping
    by_printer = (await venue.cli_ok("stats", "--json")).json()
    by_hour = (await venue.cli_ok("stats", "--by", "hour", "--json")).json()
    by_source = (await venue.cli_ok("stats", "--by", "source", "--json")).json()

    # THEN badges are counted where they printed, with the failed attempt
    assert by_printer["items"] == [
        {"printer_id": "printer-a", "printed": 2, "failed_attempts": 1},
        {"printer_id": "printer-b", "printed": 2, "failed_attempts": 0},
    ]
    # AND by the hour they printed in (UTC; a test may straddle an hour)
    assert sum(row["printed"] for row in by_hour["items"]) == 4
    this_hour = time.strftime("%Y-%m-%dT%H:00Z", time.gmtime())
    assert by_hour["items"][-1]["hour"] == this_hour
    # AND by who submitted them: the kiosk, and the operator's reprint
    assert by_source["items"] == [{"source": "kiosk:kiosk-1", "printed": 3},
                                 {"source": "operator:ops", "printed": 1}]  # fmt: skip
    # AND the totals, the reprint rate and why prints failed
    assert by_printer["totals"] == {"accepted": 5, "printed": 4, "shed": 0, "canceled": 1,
                                    "expired": 0, "reprints": 1, "failed_attempts": 1}  # fmt: skip
    assert by_printer["reprint_rate"] == 1 / 5
    assert by_printer["failure_reasons"] == [{"reason": "paper jam", "count": 1}]
    # AND the table says so too
    table = await venue.cli_ok("stats")
    assert table.line("printer-a").split() == ["printer-a", "2", "1"]
    assert "paper jam" in table.out and "(rate 20.0%)" in table.out
