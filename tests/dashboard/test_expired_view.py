"""An expired job on the dashboard, in real headless Chromium: the statistics and the
reconciliation count it, and the attendee's job card says it expired and offers a
reprint (the attendee came back after the deadline)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from redis.asyncio import Redis

from badgeline.coordinator.config import CoordinatorSettings
from tests.conftest import KIOSK_TOKEN, auth
from tests.dashboard.browser import Browser, Venue, chromium, running_venue, sign_in
from tests.helpers import job_body, wait_for

pytestmark = pytest.mark.slow


@pytest.fixture
async def venue(redis: Redis, settings: CoordinatorSettings) -> AsyncIterator[Venue]:
    fast = settings.model_copy(update={"expiry_sweep_interval_s": 0.05})
    async with running_venue(fast, redis, ("printer-a",)) as venue:
        yield venue


async def test_the_dashboard_shows_an_expired_job(venue: Venue) -> None:
    # GIVEN a job with a one-second deadline queued behind a paused printer
    await venue.post("/v1/printers/printer-a/pause", {})
    body = job_body("printer-a", expire_after_s=1)
    assert venue.http is not None
    async with venue.http.post(venue.base_url + "/v1/jobs", json=body,
                               headers=auth(KIOSK_TOKEN)) as response:  # fmt: skip
        assert response.status == 201, await response.text()

    async def expired() -> bool:
        return bool((await venue.get("/v1/stats"))["totals"]["expired"] == 1)

    await wait_for(expired, timeout_s=10)
    # WHEN an operator looks
    async with chromium() as (api, context):
        expect: Any = api.expect
        page = await context.new_page()
        seen = Browser(page)
        await sign_in(page, expect, venue.base_url)
        # THEN the statistics have an expired tile, and reconciliation an expired part
        tile = page.locator("#stats .tile", has_text="expired")
        await expect(tile.locator(".tile-value")).to_have_text("1")
        await expect(page.locator("#reconcile .legend .expired")).to_have_text("expired 1")
        await expect(page.locator("#reconcile .verdict-line.ok")).to_contain_text("accounted for")
        # AND the attendee's job says it expired, when, and may be reprinted
        await page.fill("#attendee", body["attendee_id"])
        await page.click("#search button[type=submit]")
        job = page.locator("#results article.job")
        await expect(job.locator(".verdict")).to_have_text("expired")
        await expect(job.locator(".facts")).to_contain_text("expired ")
        await expect(job.locator("tbody")).to_contain_text("queued → expired")
        await expect(job.locator("button.reprint")).to_have_count(1)
    assert seen.problems == []
