"""The dashboard in real headless Chromium (Debian's `chromium`, driven by
Playwright): sign in, watch a printer jam and its queue fail over, drain a
degraded printer by clicking, pause for some minutes, search a job's history.

The coordinator runs on a real port with real Redis; the printers are agents
played over the agent HTTP API by background heartbeat tasks.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis

from badgeline.coordinator.config import CoordinatorSettings
from tests.conftest import OPERATOR_TOKEN
from tests.dashboard.browser import HEALTHY, Browser, Venue, card, chromium, running_venue
from tests.helpers import wait_for

pytestmark = pytest.mark.slow


@pytest.fixture
async def venue(redis: Redis, settings: CoordinatorSettings) -> AsyncIterator[Venue]:
    async with running_venue(settings, redis, ("printer-a", "printer-b")) as venue:
        yield venue


async def test_operator_sees_a_jam_fail_over_and_drains_by_click(
    venue: Venue, tmp_path: Path
) -> None:
    await wait_for(venue.all_healthy, timeout_s=10)
    await venue.submit("printer-b", 1)
    printing = await venue.start_printing_one("printer-b")
    jobs_on_a = await venue.submit("printer-a", 4)

    async with chromium(1400, 1000) as (api, context):
        expect = api.expect
        page = await context.new_page()
        seen = Browser(page)
        await sign_in(page, expect, venue.base_url)
        await see_jam_fail_over(page, expect, venue, printing, tmp_path)
        await drain_a_degraded_printer(page, expect, venue)
        await pause_for_minutes_and_resume(page, expect)
        await see_reports(page, expect, venue)
        await search_and_reprint(page, expect, venue, jobs_on_a[0]["attendee_id"])
        await page.evaluate("window.scrollTo(0, 0)")  # a sticky header in a full-page shot
        await page.screenshot(path=str(tmp_path / "dashboard.png"), full_page=True)
    assert seen.problems == []
    # The wrong-token sign-in, and a reprint where the route is missing, are
    # the only requests the page may have had refused.
    expected = {"401 POST /dashboard/login"}
    if "/v1/jobs/{job_id}/reprint" not in venue.routes:
        expected.add("404 POST /v1/jobs/{job_id}/reprint")
    assert seen.refused == expected


async def sign_in(page: Any, expect: Any, base_url: str) -> None:
    await page.goto(base_url + "/")
    await page.fill("#token", "not-the-token")
    await page.click("button[type=submit]")
    await expect(page.locator("#login-error")).to_contain_text("not known")
    await page.fill("#token", OPERATOR_TOKEN)
    await page.click("button[type=submit]")
    await expect(page.locator("#operator")).to_have_text("signed in as ops")
    await expect(page.locator("#live")).to_have_text("live")


async def see_jam_fail_over(
    page: Any, expect: Any, venue: Venue, printing: str, tmp_path: Path
) -> None:
    a, b = card(page, "printer-a"), card(page, "printer-b")
    await expect(a.locator(".verdict")).to_have_text("healthy")
    await expect(a.locator(".depth")).to_have_text("4 queued")
    await expect(b.locator(".inflight")).to_have_text(printing)
    await expect(b.locator(".paper")).to_have_text("ok")
    # WHEN printer-a jams, the page shows it jammed (first) and its queue on printer-b
    venue.printers["printer-a"].health = {**HEALTHY, "jammed": True}
    await expect(a.locator(".verdict")).to_have_text("jammed")
    await expect(page.locator("#printers > article").first).to_have_attribute(
        "data-printer", "printer-a"
    )
    await expect(a.locator(".problems")).to_have_text("jammed")
    await expect(a.locator(".depth")).to_have_text("0 queued")
    await expect(b.locator(".depth")).to_have_text("4 queued")
    row = page.locator("#failovers tbody tr").first
    await expect(row).to_contain_text("printer-a")
    await expect(row.locator("td.num").first).to_have_text("4")
    await page.screenshot(path=str(tmp_path / "dashboard-dead.png"), full_page=True)


async def drain_a_degraded_printer(page: Any, expect: Any, venue: Venue) -> None:
    a, b = card(page, "printer-a"), card(page, "printer-b")
    # GIVEN printer-a cleared, back in service with new work, then low on paper
    venue.printers["printer-a"].health = dict(HEALTHY)
    await expect(a.locator(".verdict")).to_have_text("healthy")
    await venue.submit("printer-a", 3)
    await expect(a.locator(".depth")).to_have_text("3 queued")
    venue.printers["printer-a"].health = {**HEALTHY, "paper": "low"}
    await expect(a.locator(".verdict")).to_have_text("degraded")
    await expect(a.locator(".paper")).to_have_text("low")
    # WHEN the operator drains it (and confirms)
    page.once("dialog", lambda dialog: asyncio.ensure_future(dialog.accept()))
    await a.locator("button.drain").click()
    # THEN its queue moved to printer-b, and it is drained (paused until resumed),
    # still shown degraded: low paper is its trouble
    await expect(a.locator(".depth")).to_have_text("0 queued")
    await expect(a.locator(".verdict")).to_have_text("degraded")
    await expect(a.locator(".pause-tag")).to_have_text("drained, until resumed")
    await expect(b.locator(".depth")).to_have_text("7 queued")
    await expect(page.locator("#toast")).to_contain_text("Drained printer-a: 3 moved")


async def pause_for_minutes_and_resume(page: Any, expect: Any) -> None:
    b = card(page, "printer-b")
    await b.locator("button.pause").click()
    await b.locator("input.minutes").fill("2")
    await b.locator("button.pause-confirm").click()
    await expect(b.locator(".verdict")).to_have_text("paused")
    await expect(b.locator(".pause-tag")).to_have_text(re.compile(r"until \d\d:\d\d:\d\d"))
    await expect(page.locator("#toast")).to_contain_text("Paused printer-b for 2 min")
    await b.locator("button.resume").click()
    await expect(b.locator(".pause-tag")).to_be_hidden()
    await expect(b.locator(".verdict")).to_have_text("healthy")


async def see_reports(page: Any, expect: Any, venue: Venue) -> None:
    if "/v1/alerts" in venue.routes:  # printer-a is still low on paper
        await expect(page.locator("#alerts")).to_contain_text("printer-a")
    else:
        await expect(page.locator("#alerts-section")).to_be_hidden()
    if "/v1/reconcile" in venue.routes:
        report = page.locator("#reconcile")
        await expect(report.locator(".verdict-line.ok")).to_contain_text("accounted for")
        twice = report.locator('[data-check="printed_more_than_once"] td.num')
        await expect(twice).to_have_text("0")  # no badge printed twice
        await expect(report.locator("tr.bad")).to_have_count(0)
    else:
        await expect(page.locator("#reconcile")).to_contain_text("Not available")


async def search_and_reprint(page: Any, expect: Any, venue: Venue, attendee_id: str) -> None:
    await page.fill("#attendee", attendee_id)
    await page.click("#search button[type=submit]")
    job = page.locator("#results article.job")
    await expect(job).to_have_count(1)
    await expect(job.locator(".verdict")).to_have_text("queued")
    await expect(job.locator(".facts")).to_contain_text("printer-b")
    # The failover is in the job's history, with who moved it.
    await expect(job.locator("tbody")).to_contain_text("coordinator:failover")
    original = await job.get_attribute("data-job")
    # A queued job cannot be reprinted; the operator cancels it first.
    await expect(job.locator("button.reprint")).to_have_count(0)
    page.once("dialog", lambda dialog: asyncio.ensure_future(dialog.accept()))
    await job.locator("button.cancel").click()
    await expect(job.locator(".verdict")).to_have_text("canceled")
    await job.locator("input.reason").fill("smudged photo")
    if "/v1/jobs/{job_id}/reprint" not in venue.routes:
        await job.locator("button.reprint").click()
        await expect(page.locator("#toast")).to_contain_text("no reprint endpoint")
        return
    # An impatient double click sends the reprint twice: both answered, one badge.
    answered: list[int] = []
    page.on("response", lambda r: answered.append(r.status) if r.url.endswith("/reprint") else None)
    await job.locator("button.reprint").dblclick()

    async def both_answered() -> bool:
        return len(answered) == 2

    await wait_for(both_answered)
    assert sorted(answered) == [200, 201]
    listed = await venue.get(f"/v1/jobs?attendee_id={attendee_id}")
    assert [j["reprint_of"] for j in listed["items"]].count(original) == 1
    # The search re-runs: the original, untouched, and its reprint.
    await expect(job).to_have_count(2)
    reprint = page.locator(f"#results article.job:not([data-job='{original}'])")
    await expect(reprint.locator(".facts")).to_contain_text(f"reprint of {original}")
    await expect(reprint.locator("tbody")).to_contain_text("smudged photo")
