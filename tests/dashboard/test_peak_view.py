"""The dashboard at peak check-in, in real headless Chromium: printers ordered by
trouble with their state in words and colour, rates with a trend, no sideways
scrolling at 1280 px nor on a 390 px phone (screenshots of both in the test's
tmp dir), and a stopped coordinator shown as such, with the age of what is left.
Then the page's bad input: a 10 kB pause reason, a printer that vanished before
the click, and an action on a session that ended in another tab.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis

from badgeline.coordinator.api.auth import token_digest
from badgeline.coordinator.config import CoordinatorSettings, TokenEntry
from badgeline.coordinator.control.trend import TrendShape
from badgeline.coordinator.store.keys import VenueKeys
from tests.conftest import agent_token
from tests.dashboard.browser import HEALTHY, Browser, Venue, card, chromium, running_venue, sign_in
from tests.helpers import wait_for

pytestmark = pytest.mark.slow

PRINTERS = tuple(f"printer-{x}" for x in "abcdefgh")
# Most trouble first: silent, jammed, out of paper, paused, drained, a deep
# queue, then the healthy ones (the busier first; here by id, both near empty).
EXPECTED = [
    ("printer-a", "dead", "dead"), ("printer-b", "jammed", "jammed"),
    ("printer-c", "paper_out", "paper out"), ("printer-d", "paused", "paused"),
    ("printer-e", "draining", "drained"), ("printer-f", "backlog", "backlog"),
    ("printer-g", "healthy", "healthy"), ("printer-h", "healthy", "healthy"),
]  # fmt: skip
# The style sheet's colours (dashboard.css): paused and draining are not green.
GREEN, PAUSED, DRAINING = "rgb(31, 122, 69)", "rgb(91, 75, 183)", "rgb(31, 111, 139)"
PHONE = {"width": 390, "height": 844}
# What an agent reports is shown as text, never run (and the CSP refuses it anyway).
HOSTILE = '<img src=x onerror="window.pwned = 1">'
# Fast trend for a test: a reading every 0.25 s, one sparkline point a second.
FAST_TREND = TrendShape(sample_every_s=0.25, step_s=1.0, steps=20, rate_window_s=4.0)

# Everything the page draws stays inside the window and inside its own card or
# section, and no identifier breaks across lines (`printer-` / `b`).
LAYOUT_PROBLEMS = """() => {
  const width = document.documentElement.clientWidth;
  const name = (el) => `${el.tagName.toLowerCase()}.${el.className.baseVal ?? el.className}`
    + ` "${(el.textContent || "").trim().slice(0, 30)}"`;
  const out = [];
  const page = document.documentElement.scrollWidth;
  if (page > width) out.push(`the page scrolls sideways: ${page} > ${width}`);
  for (const el of document.querySelectorAll(".top *, main *")) {
    const r = el.getBoundingClientRect();
    if (r.width && (r.right > width + 0.5 || r.left < -0.5)) {
      out.push(`${name(el)} spans ${r.left.toFixed(0)}..${r.right.toFixed(0)} of ${width}`);
    }
  }
  for (const el of document.querySelectorAll("main button, main input")) {
    const r = el.getBoundingClientRect(), box = el.closest("article, section");
    if (!r.width || !box) continue;
    const b = box.getBoundingClientRect();
    if (r.right > b.right + 0.5 || r.left < b.left - 0.5) {
      out.push(`${name(el)} sticks out of its ${box.tagName.toLowerCase()}`);
    }
  }
  for (const el of document.querySelectorAll(".id")) {
    if (el.getClientRects().length > 1 || el.scrollWidth > el.clientWidth + 1 && el.clientWidth) {
      out.push(`${name(el)} is broken or cut`);
    }
  }
  return out;
}"""


@pytest.fixture
async def venue(
    redis: Redis, settings: CoordinatorSettings, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Venue]:
    monkeypatch.setattr("badgeline.coordinator.api.dashboard_snapshot.TREND_SHAPE", FAST_TREND)
    more = [TokenEntry(name=f"agent-{p}", role="agent", sha256=token_digest(agent_token(p)),
                       printer_id=p) for p in ("printer-f", "printer-g", "printer-h")]  # fmt: skip
    # A small high-water mark, and a full named printer sheds rather than spills:
    # a backlog and a dead letter without hundreds of jobs.
    tuned = settings.model_copy(update={
        "tokens": settings.tokens + more, "high_water_mark": 16, "spill_named_targets": False,
    })  # fmt: skip
    async with running_venue(tuned, redis, PRINTERS) as venue:
        yield venue


async def feed(venue: Venue, printer_id: str) -> None:
    """A kiosk's steady stream of check-ins for one printer (two a second)."""
    while True:
        with contextlib.suppress(OSError, AssertionError):  # the coordinator may be stopped
            await venue.submit(printer_id, 1)
        await asyncio.sleep(0.5)  # the kiosk's pace, not a wait for a condition


async def set_the_scene(venue: Venue) -> asyncio.Task[None]:
    await wait_for(venue.all_healthy, timeout_s=10)
    await venue.submit("printer-d", 3)
    await venue.post("/v1/printers/printer-d/pause", {"for_s": 600})
    await venue.post("/v1/printers/printer-e/drain", {})
    await venue.submit("printer-f", 16)
    await venue.submit("printer-f", 1, expect=503)  # full: a dead letter naming printer-f
    venue.printers["printer-g"].printing = True
    venue.printers["printer-g"].reports = {"confirmation": "sent"}  # a write-only printer
    venue.printers["printer-h"].reports = {"confirmation": "process_id"}
    feeder = asyncio.create_task(feed(venue, "printer-g"))
    venue.printers["printer-b"].health = {**HEALTHY, "jammed": True}
    venue.printers["printer-c"].health = {**HEALTHY, "paper": "out"}
    venue.printers["printer-h"].health = {**HEALTHY, "detail": HOSTILE}
    await venue.printers["printer-a"].stop()  # its agent goes silent
    return feeder


async def shown(page: Any) -> list[tuple[str, str, str]]:
    return [tuple(row) for row in await page.eval_on_selector_all(
        "#printers > article",
        "cards => cards.map(c => [c.dataset.printer, c.dataset.condition,"
        " c.querySelector('.verdict').textContent])")]  # fmt: skip


async def border(page: Any, printer_id: str) -> str:
    return str(await card(page, printer_id).evaluate("c => getComputedStyle(c).borderLeftColor"))


async def test_at_peak_the_most_troubled_printer_comes_first_and_an_outage_shows(
    venue: Venue, tmp_path: Path
) -> None:
    feeder = await set_the_scene(venue)
    try:
        async with chromium(1280, 900) as (api, context):
            expect = api.expect
            page = await context.new_page()
            seen = Browser(page)
            await sign_in(page, expect, venue.base_url)
            # THEN the printers come most troubled first, each state in words
            await wait_for(lambda: _matches(page), timeout_s=15)
            # …and in colour: paused and draining are never the healthy green
            assert await border(page, "printer-h") == GREEN
            assert await border(page, "printer-d") == PAUSED
            assert await border(page, "printer-e") == DRAINING
            await expect(card(page, "printer-d").locator(".pause-tag")).to_have_text(
                re.compile(r"until \d\d:\d\d:\d\d"))  # fmt: skip
            await expect(card(page, "printer-a").locator(".detail")).to_contain_text(
                "no heartbeat for")  # fmt: skip
            await see_rates(page, expect)
            await see_the_layout(page, expect, tmp_path / "dashboard-1280.png")
            await page.set_viewport_size(PHONE)
            # On the phone the most troubled printer is first and above the fold.
            await see_the_layout(page, expect, tmp_path / "dashboard-390.png")
            first = await page.locator("#printers > article").first.bounding_box()
            assert first is not None and first["y"] + first["height"] <= PHONE["height"]
            await see_an_outage(page, expect, venue, tmp_path / "dashboard-390-stale.png")
    finally:
        feeder.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await feeder
    assert [p for p in seen.problems if "net::ERR_" not in p] == []
    assert seen.refused == set()


async def _matches(page: Any) -> bool:
    return await shown(page) == EXPECTED


async def see_rates(page: Any, expect: Any) -> None:
    g = card(page, "printer-g")
    # printer-g prints what a kiosk sends it: a rate, and its trend as a line.
    await expect(g.locator(".rate")).to_have_text(re.compile(r"^[1-9]\d*(\.\d)? badges/min$"))
    await expect(g.locator(".spark-rate polyline")).to_have_count(1)
    # A write-only printer's weaker "printed" is said, and marked as weaker
    await expect(g.locator(".confirmation")).to_have_text("sent only (write-only printer)")
    await expect(g.locator(".confirmation")).to_have_class(re.compile(r"\bweak\b"))
    h = card(page, "printer-h")
    await expect(h.locator(".confirmation")).not_to_have_class(re.compile(r"\bweak\b"))
    await expect(h.locator(".rate")).to_have_text("0 badges/min")
    await expect(h.locator(".problems")).to_have_text(HOSTILE)
    await expect(h.locator("img")).to_have_count(0)
    assert await page.evaluate("window.pwned === undefined")
    await expect(page.locator("#fleet-summary")).to_contain_text("3 down")
    row = page.locator('#stats tr[data-printer="printer-g"] td')
    await expect(row.nth(3)).to_have_text(re.compile(r"^[1-9]"))
    await expect(page.locator("#reconcile .verdict-line.ok")).to_be_visible()
    await expect(page.locator("#dead-letters tbody tr")).to_have_count(1)


async def see_the_layout(page: Any, expect: Any, screenshot: Path) -> None:
    await expect(page.locator("#dead-letters tbody tr")).to_have_count(1)
    await page.evaluate("window.scrollTo(0, 0)")
    problems = await page.evaluate(LAYOUT_PROBLEMS)
    assert problems == [], "\n".join(problems)
    assert await page.locator("#printers > article").first.get_attribute("data-printer") == (
        "printer-a"
    )
    await page.screenshot(path=str(screenshot), full_page=True)


async def stale_age(page: Any) -> int:
    text = await page.locator("#stale-age").text_content() or ""
    found = re.fullmatch(r"last update (\d+) s ago", text)
    return int(found.group(1)) if found else -1


async def see_an_outage(page: Any, expect: Any, venue: Venue, screenshot: Path) -> None:
    # WHEN the coordinator stops
    await venue.stop_coordinator()
    # THEN the page says so at the top, with the age of what it still shows, greyed
    banner = page.locator("#stale-banner")
    await expect(banner).to_be_visible()
    await expect(page.locator("#stale-headline")).to_have_text("Coordinator unreachable")
    await expect(page.locator("#stale-cause")).to_contain_text("does not answer")
    await expect(page.locator("#live")).to_have_text("offline")
    assert "grayscale(1)" in await page.locator("main").evaluate("m => getComputedStyle(m).filter")
    first = await wait_for(lambda: stale_age(page))
    await wait_for(lambda: _older(page, first), timeout_s=10)  # the age keeps counting
    await page.evaluate("window.scrollTo(0, 0)")
    await page.screenshot(path=str(screenshot), full_page=False)
    # WHEN it is back on its port, the page is live again
    await venue.start_coordinator()
    await expect(banner).to_be_hidden(timeout=15_000)
    await expect(page.locator("#live")).to_have_text("live")


async def _older(page: Any, than: int) -> bool:
    return await stale_age(page) >= than + 2


async def test_bad_input_from_the_page_is_refused_clearly(
    venue: Venue, redis: Redis, tmp_path: Path
) -> None:
    await wait_for(venue.all_healthy, timeout_s=10)
    async with chromium(1280, 900) as (api, context):
        expect = api.expect
        page = await context.new_page()
        seen = Browser(page)
        sent: list[str] = []
        page.on("request", lambda r: sent.append(f"{r.method} {r.url}") if r.method == "POST"
                else None)  # fmt: skip

        async def hold(route: Any) -> None:
            await route.abort()

        # No live pushes on this page: a push would redraw the cards between the
        # test's change and its click. An action's own redraw draws them.
        await page.route("**/dashboard/stream", hold)
        await sign_in(page, expect, venue.base_url)
        await page.click("#rebalance")
        a = card(page, "printer-a")
        await expect(a).to_be_visible()
        await pause_with_bad_then_good_input(page, expect, venue, sent)
        await act_on_a_vanished_printer(page, expect, venue, redis, sent)
        await act_after_the_session_ended(page, context, expect, venue)
        await page.screenshot(path=str(tmp_path / "signed-out.png"))
    assert [p for p in seen.problems if "net::ERR_" not in p] == []
    assert seen.refused == {"401 GET /v1/printers"}


async def pause_with_bad_then_good_input(
    page: Any, expect: Any, venue: Venue, sent: list[str]
) -> None:
    a, toast = card(page, "printer-a"), page.locator("#toast")
    await a.locator("button.pause").click()
    await expect(a.locator("label", has_text="Minutes")).to_be_visible()
    await expect(a.locator("input.minutes")).to_have_attribute("placeholder", "until resumed")
    # GIVEN a 10 kB reason: refused before anything is sent, saying what to fix
    await a.locator("input.minutes").fill("10")
    await a.locator("input.reason").fill("x" * 10_240)
    await a.locator("button.pause-confirm").click()
    await expect(toast).to_contain_text("The reason is 10,240 characters long; keep it to")
    await expect(toast).to_contain_text("Nothing was sent.")
    await expect(a.locator("input.reason")).to_have_attribute("aria-invalid", "true")
    # …and a duration that is no duration
    await a.locator("input.reason").fill("reloading paper")
    await a.locator("input.minutes").fill("0")
    await a.locator("button.pause-confirm").click()
    await expect(toast).to_contain_text("leave Minutes empty to pause until resumed")
    assert not [s for s in sent if s.endswith("/pause")]
    assert (await venue.printer("printer-a"))["paused"] is False
    # WHEN the input is good, the pause goes out in seconds, with the reason if
    # this coordinator's pause route takes one
    await a.locator("input.minutes").fill("10")
    async with page.expect_request("**/v1/printers/printer-a/pause") as request:
        await a.locator("button.pause-confirm").click()
    body = (await request.value).post_data_json
    schema = (await venue.get("/v1/openapi.json"))["components"]["schemas"]["PauseRequest"]
    takes_reason = "reason" in schema["properties"]
    assert body == ({"for_s": 600, "reason": "reloading paper"} if takes_reason
                    else {"for_s": 600})  # fmt: skip
    await expect(toast).to_contain_text("Paused printer-a for 10 min")
    if not takes_reason:
        await expect(toast).to_contain_text("the reason was not saved")
    printer = await venue.printer("printer-a")
    assert printer["paused"] is True


async def act_on_a_vanished_printer(
    page: Any, expect: Any, venue: Venue, redis: Redis, sent: list[str]
) -> None:
    # GIVEN printer-b's record is gone from the venue (as after a Redis failover to
    # a replica that had not seen it yet) while its card is still on the page
    await venue.printers["printer-b"].stop()
    keys = VenueKeys(venue.settings.venue)
    await redis.srem(keys.printers, "printer-b")
    await redis.delete(keys.printer("printer-b"))
    b = card(page, "printer-b")
    await expect(b).to_be_visible()
    # WHEN the operator drains it, THEN nothing is sent and the page says why
    await b.locator("button.drain").click()
    await expect(page.locator("#toast")).to_contain_text(
        "printer-b is no longer known to the coordinator (its record is gone): nothing was done"
    )
    await expect(b).to_have_count(0)
    assert not [s for s in sent if s.endswith("/drain")]


async def act_after_the_session_ended(page: Any, context: Any, expect: Any, venue: Venue) -> None:
    # GIVEN the operator signs out in another tab
    other = await context.new_page()
    await other.goto(venue.base_url + "/")
    await expect(other.locator("#operator")).to_have_text("signed in as ops")
    await other.click("#logout")
    await expect(other.locator("#token")).to_be_visible()
    # WHEN this tab's Resume is clicked, THEN the sign-in page says it was not done
    await card(page, "printer-a").locator("button.resume").click()
    await expect(page.locator("#login-error")).to_contain_text("your last action was not done")
    assert (await venue.printer("printer-a"))["paused"] is True
