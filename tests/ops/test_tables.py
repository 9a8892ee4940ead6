"""Every table the operator CLI prints has one header per column, each over its column:
a row splits into as many fields as there are headers (only the last may be a phrase),
and each field starts where its header does. A bar without a header, a health of
`paper low` or a header `AT (UTC)` broke that: 7 values under 6 headers."""

from __future__ import annotations

import re

import pytest

from badgeline.ops.tables import table
from tests.helpers import wait_for
from tests.ops.conftest import MakeVenue
from tests.ops.venue import Venue, alive

HEADER_WORD = re.compile(r"^[A-Z#][A-Z0-9#-]*$")


def header_offsets(line: str) -> list[int]:
    return [match.start() for match in re.finditer(r"\S+", line)]


def is_header(line: str) -> bool:
    words = line.split()
    return len(words) >= 2 and all(HEADER_WORD.match(word) for word in words)


def aligned_tables(output: str) -> int:
    """Check every table in a command's output; return how many there were."""
    found = 0
    for block in output.split("\n\n"):
        lines = block.splitlines()
        # A header has rows under it (a last line in capitals, CLEAN, is a verdict).
        starts = [n for n, line in enumerate(lines[:-1]) if is_header(line)]
        if not starts:
            continue
        header = lines[starts[0]]
        offsets = header_offsets(header)
        rows = lines[starts[0] + 1 :]
        for row in rows:
            fields = row.split(maxsplit=len(offsets) - 1)
            assert len(fields) == len(offsets), f"{len(fields)} values under:\n{header}\n{row}"
            # each field starts under its header: the columns are where they say
            row_offsets = header_offsets(row)[: len(offsets)]
            assert row_offsets == offsets, f"misaligned:\n{header}\n{row}"
        found += 1
    return found


def test_a_cell_with_spaces_stays_one_field_and_a_header_is_one_word() -> None:
    text = table(["PRINTER", "HEALTH", "REASON"], [["printer-a", "paper low", "a long reason"],
                                                    ["printer-bb", None, "x"]])  # fmt: skip
    assert text.splitlines() == [
        "PRINTER     HEALTH     REASON",
        "printer-a   paper_low  a long reason",
        "printer-bb  -          x",
    ]
    assert aligned_tables(text) == 1
    for bad in ("", "AT (UTC)"):
        with pytest.raises(ValueError, match="one word"):
            table(["JOB", bad], [["job_1", "x"]])


async def test_every_command_prints_headers_over_their_columns(
    make_venue: MakeVenue,
) -> None:
    # GIVEN a venue with something in every table: a printed job with a failed attempt
    # before it, a paper-low printer, a jammed one (a failover), a paused and a
    # rejecting printer, a dead letter
    venue: Venue = await make_venue(high_water_mark=1, spill_named_targets=False)
    for printer_id in ("printer-a", "printer-b", "printer-c"):
        await alive(venue, printer_id)
    agent = venue.agent("printer-a")
    (job_id,) = await venue.submit("printer-a", attendee_id="att_tables")
    (leased,) = await agent.lease()
    await agent.start(leased)
    await agent.ack(leased, "failed", error="paper jam at the cutter")
    (again,) = await agent.lease(wait=5)
    await agent.start(again)
    await agent.ack(again)
    await venue.submit("printer-c")
    (shed,) = await venue.submit("printer-c", status=503)
    agent.health["paper"] = "low"
    venue.agent("printer-b").health["jammed"] = True
    await venue.cli_ok("pause", "printer-c", "--reason", "roll change")
    await venue.cli_ok("reject", "printer-a", "--reason", "toner low")
    await wait_for(lambda: _failed_over(venue), timeout_s=30)

    # WHEN every command that prints a table runs THEN each table is aligned
    commands = [
        ["printers"], ["queues"], ["peek", "printer-c"], ["job", job_id],
        ["jobs", "--attendee", "att_tables"], ["dlq", "list"], ["failovers"], ["alerts"],
        ["stats"], ["stats", "--by", "hour"], ["stats", "--by", "source"],
        ["reconcile", "--deadline", "0"], ["dlq", "redrive"], ["cancel", shed],
        ["resume", "printer-c"], ["rebalance"],
    ]  # fmt: skip
    for command in commands:
        result = await venue.cli(*command)
        assert result.code in (0, 1) and result.err == "", (command, result.err)
        assert aligned_tables(result.out) >= 1 or command == ["rebalance"], (command, result.out)


async def _failed_over(venue: Venue) -> bool:
    return bool((await venue.ops("GET", "/v1/failovers"))["items"])
