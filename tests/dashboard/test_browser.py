"""The dashboard in real headless Chromium (Debian's `chromium`, driven by
Playwright): sign in, watch a printer jam and its queue fail over, drain a
degraded printer by clicking, pause with a TTL, search a job's history.

The coordinator runs on a real port with real Redis; the printers are agents
played over the agent HTTP API by background heartbeat tasks.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import pytest
from aiohttp import web
from redis.asyncio import Redis

from badgeline.coordinator.app import create_app
from badgeline.coordinator.config import CoordinatorSettings
from tests.conftest import KIOSK_TOKEN, OPERATOR_TOKEN, agent_token, auth
from tests.helpers import job_body, wait_for

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
INSTALL = "apt-get install -y chromium && .venv/bin/pip install playwright"
SCREENSHOT = Path("/tmp/badgeline-dashboard.png")
SCREENSHOT_DEAD = Path("/tmp/badgeline-dashboard-dead.png")
HEALTHY = {"reachable": True, "jammed": False, "cover_open": False, "paper": "ok"}
# Page-side waits: long enough for a loaded CI machine, short enough to fail fast.
UI_TIMEOUT_MS = 10_000

pytestmark = pytest.mark.slow


def playwright_api() -> Any:
    """The browser is part of the test, not optional: a missing one fails loudly."""
    try:
        from playwright import async_api
    except ImportError:
        pytest.fail(f"Python Playwright is not installed; run: {INSTALL}", pytrace=False)
    if not CHROMIUM.is_file():
        pytest.fail(f"{CHROMIUM} is missing; run: {INSTALL}", pytrace=False)
    return async_api


class PlayedPrinter:
    """An agent played over the real agent API: it heartbeats, every 0.25 s like a
    real agent, whatever health the test sets, and never leases (queues stay put)."""

    def __init__(self, base_url: str, printer_id: str) -> None:
        self.url = f"{base_url}/v1/agents/{printer_id}/heartbeat"
        self.printer_id = printer_id
        self.health = dict(HEALTHY)
        self._task: asyncio.Task[None] | None = None

    async def _beat_forever(self) -> None:
        headers = auth(agent_token(self.printer_id))
        async with aiohttp.ClientSession() as http:
            while True:
                body = {"agent_id": f"pi-{self.printer_id}", "version": "0.1.0",
                        "health": self.health, "labels": ["hall-a"]}  # fmt: skip
                async with http.post(self.url, json=body, headers=headers) as response:
                    assert response.status == 200, await response.text()
                await asyncio.sleep(0.25)  # the heartbeat period, not a wait for a condition

    def start(self) -> None:
        self._task = asyncio.create_task(self._beat_forever(), name=f"beat-{self.printer_id}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


class Venue:
    def __init__(self, base_url: str, http: aiohttp.ClientSession, app: web.Application) -> None:
        self.base_url = base_url
        self.http = http
        # Reports and reprints are another engineer's routes: the page degrades
        # without them, and the test checks whichever behaviour applies.
        self.routes = {resource.canonical for resource in app.router.resources()}
        self.printers = {p: PlayedPrinter(base_url, p) for p in ("printer-a", "printer-b")}

    async def get(self, path: str) -> Any:
        async with self.http.get(self.base_url + path, headers=auth(OPERATOR_TOKEN)) as response:
            assert response.status == 200, await response.text()
            return await response.json()

    async def state(self, printer_id: str) -> str:
        printers = (await self.get("/v1/printers"))["printers"]
        return str(next((p["state"] for p in printers if p["printer_id"] == printer_id), ""))

    async def all_healthy(self) -> bool:
        return all([await self.state(p) == "healthy" for p in self.printers])

    async def submit(self, printer_id: str, count: int) -> list[dict[str, Any]]:
        bodies = [job_body(printer_id) for _ in range(count)]
        for body in bodies:
            async with self.http.post(self.base_url + "/v1/jobs", json=body,
                                      headers=auth(KIOSK_TOKEN)) as response:  # fmt: skip
                assert response.status == 201, await response.text()
        return bodies

    async def start_printing_one(self, printer_id: str) -> str:
        """Lease and start one job, never acked: the printer's in-flight job."""
        headers = auth(agent_token(printer_id))
        base = f"{self.base_url}/v1/agents/{printer_id}"
        async with self.http.post(f"{base}/lease?max=1", headers=headers) as response:
            [leased] = (await response.json())["jobs"]
        async with self.http.post(f"{base}/jobs/{leased['job_id']}/start", headers=headers,
                                  json={"lease_id": leased["lease_id"]}) as response:  # fmt: skip
            assert response.status == 200
        return str(leased["job_id"])


@pytest.fixture
async def venue(redis: Redis, settings: CoordinatorSettings) -> AsyncIterator[Venue]:
    app = create_app(settings, redis)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    async with aiohttp.ClientSession() as http:
        venue = Venue(f"http://{host}:{port}", http, app)
        for played in venue.printers.values():
            played.start()
        try:
            yield venue
        finally:
            for played in venue.printers.values():
                await played.stop()
            await runner.cleanup()


def refusal(response: Any) -> str:
    path = re.sub(r"job_[0-9a-f]+", "{job_id}", urlsplit(response.url).path)
    return f"{response.status} {response.request.method} {path}"


def card(page: Any, printer_id: str) -> Any:
    return page.locator(f'[data-printer="{printer_id}"]')


async def test_operator_sees_a_jam_fail_over_and_drains_by_click(venue: Venue) -> None:
    api = playwright_api()
    expect = api.expect
    expect.set_options(timeout=UI_TIMEOUT_MS)
    await wait_for(venue.all_healthy, timeout_s=10)
    await venue.submit("printer-b", 1)
    printing = await venue.start_printing_one("printer-b")
    jobs_on_a = await venue.submit("printer-a", 4)

    async with api.async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=str(CHROMIUM),
                                                   args=CHROMIUM_ARGS)  # fmt: skip
        page = await browser.new_page(viewport={"width": 1400, "height": 1000})
        problems: list[str] = []
        page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
        page.on("console", lambda m: problems.append(m.text) if m.type == "error"
                and not m.text.startswith("Failed to load resource") else None)  # fmt: skip
        refused: set[str] = set()
        page.on("response", lambda r: refused.add(refusal(r)) if r.status >= 400 else None)
        try:
            await sign_in(page, expect, venue.base_url)
            await see_jam_fail_over(page, expect, venue, printing)
            await drain_a_degraded_printer(page, expect, venue)
            await pause_with_ttl_and_resume(page, expect)
            await see_reports(page, expect, venue)
            await search_and_reprint(page, expect, venue, jobs_on_a[0]["attendee_id"])
            await page.evaluate("window.scrollTo(0, 0)")  # a sticky header in a full-page shot
            await page.screenshot(path=str(SCREENSHOT), full_page=True)
        finally:
            await browser.close()
    assert problems == []
    # The wrong-token sign-in, and a reprint where the route is missing, are
    # the only requests the page may have had refused.
    expected = {"401 POST /dashboard/login"}
    if "/v1/jobs/{job_id}/reprint" not in venue.routes:
        expected.add("404 POST /v1/jobs/{job_id}/reprint")
    assert refused == expected


async def sign_in(page: Any, expect: Any, base_url: str) -> None:
    await page.goto(base_url + "/")
    await page.fill("#token", "not-the-token")
    await page.click("button[type=submit]")
    await expect(page.locator("#login-error")).to_contain_text("not known")
    await page.fill("#token", OPERATOR_TOKEN)
    await page.click("button[type=submit]")
    await expect(page.locator("#operator")).to_have_text("signed in as ops")
    await expect(page.locator("#live")).to_have_text("live")


async def see_jam_fail_over(page: Any, expect: Any, venue: Venue, printing: str) -> None:
    a, b = card(page, "printer-a"), card(page, "printer-b")
    await expect(a.locator(".verdict")).to_have_text("healthy")
    await expect(a.locator(".depth")).to_have_text("4 queued")
    await expect(b.locator(".inflight")).to_have_text(printing)
    await expect(b.locator(".paper")).to_have_text("ok")
    # WHEN printer-a jams, the page shows it dead and its queue on printer-b
    venue.printers["printer-a"].health = {**HEALTHY, "jammed": True}
    await expect(a.locator(".verdict")).to_have_text("dead")
    await expect(a.locator(".problems")).to_have_text("jammed")
    await expect(a.locator(".depth")).to_have_text("0 queued")
    await expect(b.locator(".depth")).to_have_text("4 queued")
    row = page.locator("#failovers tbody tr").first
    await expect(row).to_contain_text("printer-a")
    await expect(row.locator("td.num").first).to_have_text("4")
    await page.screenshot(path=str(SCREENSHOT_DEAD), full_page=True)


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
    # THEN it is paused and its queue moved to printer-b
    await expect(a.locator(".depth")).to_have_text("0 queued")
    await expect(a.locator(".paused-tag")).to_be_visible()
    await expect(b.locator(".depth")).to_have_text("7 queued")
    await expect(page.locator("#toast")).to_contain_text("Drained printer-a: 3 moved")


async def pause_with_ttl_and_resume(page: Any, expect: Any) -> None:
    b = card(page, "printer-b")
    await b.locator("input.ttl").fill("90")
    await b.locator("button.pause").click()
    await expect(b.locator(".paused-tag")).to_have_text(re.compile(r"paused until \d\d:\d\d:\d\d"))
    await b.locator("button.resume").click()
    await expect(b.locator(".paused-tag")).to_be_hidden()


async def see_reports(page: Any, expect: Any, venue: Venue) -> None:
    if "/v1/alerts" in venue.routes:  # printer-a is still low on paper
        await expect(page.locator("#alerts")).to_contain_text("printer-a")
    else:
        await expect(page.locator("#alerts-section")).to_be_hidden()
    if "/v1/reconcile" in venue.routes:
        report = page.locator("#reconcile dl.report")
        await expect(report).to_contain_text("printed more than once")
        await expect(report.locator("dd.bad")).to_have_count(0)  # no badge printed twice
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
    assert [j["reprint_of"] for j in listed["jobs"]].count(original) == 1
    # The search re-runs: the original, untouched, and its reprint.
    await expect(job).to_have_count(2)
    reprint = page.locator(f"#results article.job:not([data-job='{original}'])")
    await expect(reprint.locator(".facts")).to_contain_text(f"reprint of {original}")
    await expect(reprint.locator("tbody")).to_contain_text("smudged photo")
