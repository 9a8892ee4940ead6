"""health_from_status: every bit of every DLE EOT reply, table-driven."""

from __future__ import annotations

from typing import Any

import pytest

from badgeline.agent.printers import StatusBytes, StatusQuery, health_from_status
from badgeline.protocol.models import PrinterHealthReport
from badgeline.protocol.states import PaperLevel

OK = 0x12


def status(n1: int | None = OK, n2: int | None = OK, n3: int | None = OK, n4: int | None = OK):
    return StatusBytes(printer=n1, offline_cause=n2, error_cause=n3, paper_sensor=n4)


def healthy(**changes: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "reachable": True,
        "jammed": False,
        "cover_open": False,
        "paper": PaperLevel.OK,
        "detail": None,
    }
    return fields | changes


# (case, status bytes, expected report fields)
BIT_TABLE = [
    ("all clear", status(), healthy()),
    # n=1 printer status
    ("n1 bit3 offline", status(n1=OK | 0x08), healthy(detail="offline")),
    ("n1 bit2 drawer pin: not a printer fault", status(n1=OK | 0x04), healthy()),
    ("n1 bit5 waiting for recovery: ignored", status(n1=OK | 0x20), healthy()),
    ("n1 bit6 feed button pressed: ignored", status(n1=OK | 0x40), healthy()),
    # n=2 offline cause
    ("n2 bit2 cover open", status(n2=OK | 0x04), healthy(cover_open=True, detail="cover open")),
    ("n2 bit3 FEED button", status(n2=OK | 0x08), healthy(detail="paper fed by FEED button")),
    (
        "n2 bit5 stopped by paper end",
        status(n2=OK | 0x20),
        healthy(paper=PaperLevel.OUT, detail="printing stopped by paper end"),
    ),
    ("n2 bit6 error occurred", status(n2=OK | 0x40), healthy(detail="error")),
    # n=3 error cause
    ("n3 bit2 mechanical error", status(n3=OK | 0x04), healthy(detail="mechanical error")),
    (
        "n3 bit3 auto-cutter error",
        status(n3=OK | 0x08),
        healthy(jammed=True, detail="auto-cutter error"),
    ),
    (
        "n3 bit5 unrecoverable error",
        status(n3=OK | 0x20),
        healthy(jammed=True, detail="unrecoverable error"),
    ),
    (
        "n3 bit6 auto-recoverable error",
        status(n3=OK | 0x40),
        healthy(detail="auto-recoverable error"),
    ),
    # n=4 paper roll sensor
    (
        "n4 bits2+3 near end",
        status(n4=OK | 0x0C),
        healthy(paper=PaperLevel.LOW, detail="paper near end"),
    ),
    (
        "n4 bit2 alone: near end",
        status(n4=OK | 0x04),
        healthy(paper=PaperLevel.LOW, detail="paper near end"),
    ),
    (
        "n4 bit3 alone: near end",
        status(n4=OK | 0x08),
        healthy(paper=PaperLevel.LOW, detail="paper near end"),
    ),
    (
        "n4 bits5+6 paper end",
        status(n4=OK | 0x60),
        healthy(paper=PaperLevel.OUT, detail="paper end"),
    ),
    (
        "n4 bit5 alone: paper end",
        status(n4=OK | 0x20),
        healthy(paper=PaperLevel.OUT, detail="paper end"),
    ),
    (
        "n4 bit6 alone: paper end",
        status(n4=OK | 0x40),
        healthy(paper=PaperLevel.OUT, detail="paper end"),
    ),
    (
        "n4 near end and end: out wins",
        status(n4=0x7E),
        healthy(paper=PaperLevel.OUT, detail="paper near end; paper end"),
    ),
]

# What a real Epson answers in each fault (the emulator's table, from Epson's reference).
FAULT_TABLE = [
    (
        "cutter jam",
        status(0x1A, 0x52, 0x1A, 0x12),
        healthy(jammed=True, detail="offline; error; auto-cutter error"),
    ),
    (
        "cover open",
        status(0x1A, 0x16, 0x12, 0x12),
        healthy(cover_open=True, detail="offline; cover open"),
    ),
    (
        "paper out",
        status(0x1A, 0x32, 0x12, 0x7E),
        healthy(
            paper=PaperLevel.OUT,
            detail="offline; printing stopped by paper end; paper near end; paper end",
        ),
    ),
    (
        "paper low",
        status(0x12, 0x12, 0x12, 0x1E),
        healthy(paper=PaperLevel.LOW, detail="paper near end"),
    ),
]


@pytest.mark.parametrize(("case", "replies", "expected"), BIT_TABLE + FAULT_TABLE)
def test_each_status_bit_maps_to_its_health_field(
    case: str, replies: StatusBytes, expected: dict[str, Any]
) -> None:
    # GIVEN four well-formed DLE EOT replies
    # WHEN they are mapped
    report = health_from_status(replies)
    # THEN the report carries exactly the condition that bit stands for
    assert report.model_dump(exclude={"ribbon_pct", "paused"}) == expected, case


NOT_STATUS_BYTES = [0x00, 0x02, 0x10, 0x13, 0x92, 0xFF]


@pytest.mark.parametrize("query", list(StatusQuery))
@pytest.mark.parametrize("value", NOT_STATUS_BYTES)
def test_a_byte_without_the_fixed_bits_means_unreachable(query: StatusQuery, value: int) -> None:
    # GIVEN one reply that lacks bits 1 and 4 set / bits 0 and 7 clear
    replies = [OK, OK, OK, OK]
    replies[query - 1] = value
    # WHEN mapped
    report = health_from_status(StatusBytes(*replies))
    # THEN the printer is not trusted to be there, and the detail says which reply was bad
    assert report.reachable is False
    assert report.detail == (
        f"DLE EOT {query.value} reply {value:#04x} is not an ESC/POS status byte"
    )


@pytest.mark.parametrize("query", list(StatusQuery))
def test_a_missing_reply_means_unreachable(query: StatusQuery) -> None:
    # GIVEN no reply to one of the four queries
    replies: list[int | None] = [OK, OK, OK, OK]
    replies[query - 1] = None
    # WHEN mapped
    report = health_from_status(StatusBytes(*replies))
    # THEN unreachable, naming the query that went unanswered
    assert report.reachable is False
    assert report.detail is not None
    assert report.detail.startswith(f"no reply to DLE EOT {query.value} ")


def test_every_possible_byte_in_every_position_maps_without_error() -> None:
    # GIVEN any byte at all in any of the four positions
    for position in range(4):
        for value in range(256):
            replies = [OK, OK, OK, OK]
            replies[position] = value
            # WHEN mapped
            report = health_from_status(StatusBytes(*replies))
            # THEN a valid report comes out, reachable exactly when the byte is a status byte
            assert isinstance(report, PrinterHealthReport)
            assert report.reachable is (value & 0x93 == 0x12)


def test_every_condition_at_once_fits_the_detail_limit() -> None:
    # GIVEN a printer reporting every condition the map knows
    report = health_from_status(status(0x1A, 0x7E, 0x7E, 0x7E))
    # THEN all flags are set and the detail still validates (max 200 characters)
    assert (report.jammed, report.cover_open, report.paper) == (True, True, PaperLevel.OUT)
    assert report.detail is not None and "auto-recoverable error" in report.detail


def test_queries_are_dle_eot_one_to_four() -> None:
    assert [query.command for query in StatusQuery] == [
        b"\x10\x04\x01",
        b"\x10\x04\x02",
        b"\x10\x04\x03",
        b"\x10\x04\x04",
    ]
