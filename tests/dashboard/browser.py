"""What the dashboard's browser tests share: Debian's Chromium driven by Playwright,
a coordinator on a real port (which a test can stop and start again on the same
port), and printers played over the real agent API.
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
from tests.helpers import job_body

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
INSTALL = "apt-get install -y chromium && .venv/bin/pip install playwright"
HEALTHY = {"reachable": True, "jammed": False, "cover_open": False, "paper": "ok"}
# Page-side waits: long enough for a loaded CI machine, short enough to fail fast.
UI_TIMEOUT_MS = 10_000
BEAT_EVERY_S = 0.25  # like a real agent: several heartbeats per heartbeat interval


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
    """An agent played over the real agent API: it heartbeats whatever health the
    test sets, and leases nothing unless told to print (then one badge per beat,
    leased, started and acked printed, as an agent with a fast printer would)."""

    def __init__(self, base_url: str, printer_id: str) -> None:
        self.base = f"{base_url}/v1/agents/{printer_id}"
        self.printer_id = printer_id
        self.health = dict(HEALTHY)
        # what else the agent says of its printer (confirmation, language)
        self.reports: dict[str, Any] = {}
        self.printing = False
        self._task: asyncio.Task[None] | None = None

    async def _print_one(self, http: aiohttp.ClientSession, headers: dict[str, str]) -> None:
        async with http.post(f"{self.base}/lease?max=1&wait=0", headers=headers) as response:
            jobs = (await response.json())["jobs"] if response.status == 200 else []
        for leased in jobs:
            job = f"{self.base}/jobs/{leased['job_id']}"
            async with http.post(f"{job}/start", headers=headers,
                                 json={"lease_id": leased["lease_id"]}) as response:  # fmt: skip
                if response.status != 200:
                    continue  # refused (moved by a failover meanwhile): never print it
                fence = (await response.json())["fence"]
            async with http.post(f"{job}/ack", headers=headers,
                                 json={"lease_id": leased["lease_id"], "result": "printed",
                                       "fence": fence}) as response:  # fmt: skip
                assert response.status == 200, await response.text()

    async def _beat_forever(self) -> None:
        headers = auth(agent_token(self.printer_id))
        async with aiohttp.ClientSession() as http:
            while True:
                body = {"agent_id": f"pi-{self.printer_id}", "version": "0.1.0",
                        "health": self.health, "labels": ["hall-a"], **self.reports}  # fmt: skip
                # A stopped coordinator refuses the connection: a real agent carries on.
                with contextlib.suppress(aiohttp.ClientConnectionError):
                    async with http.post(f"{self.base}/heartbeat", json=body,
                                         headers=headers) as response:  # fmt: skip
                        assert response.status == 200, await response.text()
                    if self.printing:
                        await self._print_one(http, headers)
                await asyncio.sleep(BEAT_EVERY_S)  # the heartbeat period, not a wait

    def start(self) -> None:
        self._task = asyncio.create_task(self._beat_forever(), name=f"beat-{self.printer_id}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None


class Venue:
    """A coordinator on a real port, its HTTP client, and the played printers."""

    def __init__(self, settings: CoordinatorSettings, redis: Redis, printer_ids: tuple[str, ...]):
        self.settings = settings
        self.redis = redis
        self.printer_ids = printer_ids
        self.port = 0
        self.base_url = ""
        self.routes: set[str] = set()
        self.runner: web.AppRunner | None = None
        self.http: aiohttp.ClientSession | None = None
        self.printers: dict[str, PlayedPrinter] = {}

    async def start_coordinator(self) -> None:
        """Serve on a new port the first time, on the same one after a stop."""
        app = create_app(self.settings, self.redis)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", self.port)
        await site.start()
        self.port = self.runner.addresses[0][1]
        self.base_url = f"http://127.0.0.1:{self.port}"
        # Reports and reprints are another engineer's routes: the page degrades
        # without them, and a test checks whichever behaviour applies.
        self.routes = {resource.canonical for resource in app.router.resources()}

    async def stop_coordinator(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
            self.runner = None

    async def get(self, path: str) -> Any:
        assert self.http is not None
        async with self.http.get(self.base_url + path, headers=auth(OPERATOR_TOKEN)) as response:
            assert response.status == 200, await response.text()
            return await response.json()

    async def post(self, path: str, body: dict[str, Any]) -> Any:
        assert self.http is not None
        async with self.http.post(self.base_url + path, json=body,
                                  headers=auth(OPERATOR_TOKEN)) as response:  # fmt: skip
            assert response.status == 200, await response.text()
            return await response.json()

    async def printer(self, printer_id: str) -> dict[str, Any]:
        printers = (await self.get("/v1/printers"))["items"]
        return next((p for p in printers if p["printer_id"] == printer_id), {})

    async def state(self, printer_id: str) -> str:
        return str((await self.printer(printer_id)).get("state", ""))

    async def all_healthy(self) -> bool:
        return all([await self.state(p) == "healthy" for p in self.printers])

    async def submit(self, printer_id: str, count: int, expect: int = 201) -> list[dict[str, Any]]:
        assert self.http is not None
        bodies = [job_body(printer_id) for _ in range(count)]
        for body in bodies:
            async with self.http.post(self.base_url + "/v1/jobs", json=body,
                                      headers=auth(KIOSK_TOKEN)) as response:  # fmt: skip
                assert response.status == expect, await response.text()
        return bodies

    async def start_printing_one(self, printer_id: str) -> str:
        """Lease and start one job, never acked: the printer's in-flight job."""
        assert self.http is not None
        headers = auth(agent_token(printer_id))
        base = f"{self.base_url}/v1/agents/{printer_id}"
        async with self.http.post(f"{base}/lease?max=1", headers=headers) as response:
            [leased] = (await response.json())["jobs"]
        async with self.http.post(f"{base}/jobs/{leased['job_id']}/start", headers=headers,
                                  json={"lease_id": leased["lease_id"]}) as response:  # fmt: skip
            assert response.status == 200
        return str(leased["job_id"])


@contextlib.asynccontextmanager
async def running_venue(
    settings: CoordinatorSettings, redis: Redis, printer_ids: tuple[str, ...]
) -> AsyncIterator[Venue]:
    venue = Venue(settings, redis, printer_ids)
    await venue.start_coordinator()
    async with aiohttp.ClientSession() as http:
        venue.http = http
        venue.printers = {p: PlayedPrinter(venue.base_url, p) for p in printer_ids}
        for played in venue.printers.values():
            played.start()
        try:
            yield venue
        finally:
            for played in venue.printers.values():
                await played.stop()
            await venue.stop_coordinator()


def refusal(response: Any) -> str:
    path = re.sub(r"job_[0-9a-f]+", "{job_id}", urlsplit(response.url).path)
    return f"{response.status} {response.request.method} {path}"


class Browser:
    """One Chromium page, with what went wrong on it: script errors, console
    errors, and every request the coordinator refused."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.problems: list[str] = []
        self.refused: set[str] = set()
        page.on("pageerror", lambda error: self.problems.append(f"page error: {error}"))
        page.on("console", lambda m: self.problems.append(m.text) if m.type == "error"
                and not m.text.startswith("Failed to load resource") else None)  # fmt: skip
        page.on("response", lambda r: self.refused.add(refusal(r)) if r.status >= 400 else None)


@contextlib.asynccontextmanager
async def chromium(width: int = 1280, height: int = 900) -> AsyncIterator[tuple[Any, Any]]:
    """(playwright's async API, a browser context) in headless Chromium."""
    api = playwright_api()
    api.expect.set_options(timeout=UI_TIMEOUT_MS)
    async with api.async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=str(CHROMIUM),
                                                   args=CHROMIUM_ARGS)  # fmt: skip
        try:
            yield api, await browser.new_context(viewport={"width": width, "height": height})
        finally:
            await browser.close()


async def sign_in(page: Any, expect: Any, base_url: str, token: str = OPERATOR_TOKEN) -> None:
    await page.goto(base_url + "/")
    await page.fill("#token", token)
    await page.click("button[type=submit]")
    await expect(page.locator("#operator")).to_have_text("signed in as ops")


def card(page: Any, printer_id: str) -> Any:
    return page.locator(f'#printers [data-printer="{printer_id}"]')
