"""Alerts: paper low raises one event per change and shows on the printer;
a dead printer, parked jobs, no healthy target and a duplicate print are
active alerts until they are fixed."""

from __future__ import annotations

import logging

import pytest

from tests.helpers import wait_for
from tests.ops.conftest import MakeVenue
from tests.ops.venue import Venue


def events(caplog: pytest.LogCaptureFixture, name: str) -> list[dict[str, object]]:
    found = [getattr(r, "fields", {}) for r in caplog.records]
    return [f for f in found if f.get("event") == name]


async def test_paper_low_raises_one_event_per_change(
    venue: Venue, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="badgeline.events")
    # GIVEN two healthy printers
    agent = venue.agent("printer-a")
    await agent.heartbeat()
    await venue.agent("printer-b").heartbeat()
    # WHEN the printer reports low paper on three heartbeats in a row
    for _ in range(3):
        assert await agent.heartbeat(paper="low") == "degraded"
    # THEN one paper_low event is logged and recorded
    assert [e["printer_id"] for e in events(caplog, "printer_paper_low")] == ["printer-a"]
    recorded = await venue.ops("GET", "/v1/alerts/events")
    assert [(e["kind"], e["printer_id"]) for e in recorded["items"]] == [("paper_low", "printer-a")]
    # AND it is an active alert, and the printer's health says so
    answer = await venue.ops("GET", "/v1/alerts")
    assert [(a["kind"], a["printer_id"]) for a in answer["items"]] == [("paper_low", "printer-a")]
    printers = (await venue.ops("GET", "/v1/printers"))["items"]
    assert printers[0]["health"]["paper"] == "low"
    printers_cli = await venue.cli_ok("printers")
    assert "paper-low" in printers_cli.line("printer-a")

    # WHEN a new roll goes in
    await agent.heartbeat(paper="ok")
    # THEN the change is one more event and the alert is gone
    assert len(events(caplog, "printer_paper_ok")) == 1
    recorded = await venue.ops("GET", "/v1/alerts/events")
    assert [e["kind"] for e in recorded["items"]] == ["paper_ok", "paper_low"]
    assert (await venue.ops("GET", "/v1/alerts"))["items"] == []


async def test_a_dead_printer_with_nowhere_to_send_work_is_critical(
    make_venue: MakeVenue,
) -> None:
    venue = await make_venue(spill_named_targets=False)
    agent = venue.agent("printer-a")
    await agent.heartbeat()
    # GIVEN the venue's only printer jams, and a badge is submitted for it
    assert await agent.heartbeat(jammed=True) == "dead"
    await venue.submit("printer-a")
    # WHEN the operator lists alerts (once the failover monitor has seen the death)
    await wait_for(lambda: _kinds(venue))
    result = await venue.cli("alerts", "--check")
    # THEN the dead printer, the parked job and the lack of a target are critical
    assert result.code == 1, result.err
    assert await _kinds(venue) == {"printer_dead", "parked_jobs", "no_healthy_target"}
    assert "printer-a is dead (jammed)" in result.out
    assert result.out.count("CRITICAL") == 3

    # WHEN the jam is cleared and the printer is back (three healthy beats)
    for _ in range(3):
        await agent.heartbeat(jammed=False)
    # THEN the parked job goes to it and the alerts clear
    await wait_for(lambda: _no_alerts(venue))
    assert (await venue.cli("alerts", "--check")).code == 0


async def _kinds(venue: Venue) -> set[str]:
    return {a["kind"] for a in (await venue.ops("GET", "/v1/alerts"))["items"]}


async def _no_alerts(venue: Venue) -> bool:
    return not await _kinds(venue)
