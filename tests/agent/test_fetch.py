"""Fetching badge PDFs: file://, http(s):// and artifact://, bounded, with typed refusals."""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from badgeline.agent.fetch import BadgeFetcher, FetchRefused
from badgeline.agent.http_client import HttpClient
from badgeline.protocol.failures import FailureReason
from tests.agent.conftest import Kiosk, LiveCoordinator, local_sources
from tests.conftest import agent_token, auth

LIMIT = 64 * 1024


async def refusal(fetching: Awaitable[bytes]) -> tuple[FailureReason, str]:
    """The classified reason and the text of a fetch that must be refused."""
    with pytest.raises(FetchRefused) as refused:
        await fetching
    return refused.value.reason, refused.value.message


@pytest.fixture
async def http() -> AsyncIterator[HttpClient]:
    async with HttpClient() as http:
        yield http


def fetcher(http: HttpClient, coordinator_url: str = "http://127.0.0.1:9") -> Any:
    return BadgeFetcher(
        http,
        sources=local_sources(Path(tempfile.gettempdir())),
        coordinator_url=coordinator_url,
        artifact_headers=auth(agent_token("printer-a")),
        max_bytes=LIMIT,
        timeout_s=5,
        retry_initial_s=0.01,
    )


async def test_file_refs_are_read_and_missing_or_oversized_files_refused(
    http: HttpClient, tmp_path: Path, badge_pdf: bytes
) -> None:
    good = tmp_path / "a badge.pdf"
    good.write_bytes(badge_pdf)
    big = tmp_path / "big.pdf"
    big.write_bytes(b"%PDF-" + b"x" * LIMIT)
    assert await fetcher(http).fetch(good.as_uri()) == badge_pdf
    assert await refusal(fetcher(http).fetch((tmp_path / "gone.pdf").as_uri())) == (
        FailureReason.NOT_FOUND,
        "no such badge file",
    )
    assert (await refusal(fetcher(http).fetch(big.as_uri())))[0] is FailureReason.TOO_LARGE
    assert await refusal(fetcher(http).fetch("file://fileserver/share/badge.pdf")) == (
        FailureReason.BAD_REFERENCE,
        "file references must be local (file:///path)",
    )


class BadgeHost:
    """A web server that hosts badges the way a registration system might."""

    def __init__(self, badge_pdf: bytes) -> None:
        self.badge_pdf = badge_pdf
        self.flaky_failures_left = 2
        self.authorization_seen: list[str | None] = []

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/badge.pdf", self.badge)
        app.router.add_get("/endless.pdf", self.endless)
        app.router.add_get("/flaky.pdf", self.flaky)
        app.router.add_get("/moved.pdf", self.moved)
        app.router.add_get("/busy.pdf", self.busy)
        return app

    async def badge(self, request: web.Request) -> web.Response:
        self.authorization_seen.append(request.headers.get("Authorization"))
        return web.Response(body=self.badge_pdf, content_type="application/pdf")

    async def endless(self, request: web.Request) -> web.StreamResponse:
        # No Content-Length: only counting while reading can stop this.
        response = web.StreamResponse()
        response.enable_chunked_encoding()
        await response.prepare(request)
        for _ in range(100):
            await response.write(b"%" * 8192)
        return response

    async def moved(self, request: web.Request) -> web.Response:
        raise web.HTTPFound("/badge.pdf")  # a CDN or an http -> https hop

    async def busy(self, request: web.Request) -> web.Response:
        # An overloaded host's error page can be larger than any badge: still a 503.
        return web.Response(status=503, body=b"<html>" + b"busy " * 50_000)

    async def flaky(self, request: web.Request) -> web.Response:
        if self.flaky_failures_left:
            self.flaky_failures_left -= 1
            return web.Response(status=503)
        return web.Response(body=self.badge_pdf, content_type="application/pdf")


@pytest.fixture
async def badge_host(aiohttp_server: Any, badge_pdf: bytes) -> Any:
    host = BadgeHost(badge_pdf)
    server = await aiohttp_server(host.app())
    host.url = str(server.make_url("")).rstrip("/")  # type: ignore[attr-defined]
    return host


async def test_http_refs_are_streamed_with_a_size_limit_and_without_the_agent_token(
    http: HttpClient, badge_host: Any, badge_pdf: bytes
) -> None:
    assert await fetcher(http).fetch(badge_host.url + "/badge.pdf") == badge_pdf
    assert badge_host.authorization_seen == [None]
    assert (await refusal(fetcher(http).fetch(badge_host.url + "/endless.pdf")))[0] is (
        FailureReason.TOO_LARGE
    )
    assert await refusal(fetcher(http).fetch(badge_host.url + "/missing.pdf")) == (
        FailureReason.NOT_FOUND,
        "no badge there (HTTP 404)",
    )
    # AND a redirect is followed to the badge
    assert await fetcher(http).fetch(badge_host.url + "/moved.pdf") == badge_pdf


async def test_a_passing_server_error_is_retried_before_the_job_is_failed(
    http: HttpClient, badge_host: Any, badge_pdf: bytes
) -> None:
    assert await fetcher(http).fetch(badge_host.url + "/flaky.pdf") == badge_pdf
    badge_host.flaky_failures_left = 5
    assert await refusal(fetcher(http).fetch(badge_host.url + "/flaky.pdf")) == (
        FailureReason.SERVER_ERROR,
        "the badge server answered HTTP 503 (3 attempts)",
    )
    # AND an error page larger than a badge is still a passing server error, not "too large"
    assert await refusal(fetcher(http).fetch(badge_host.url + "/busy.pdf")) == (
        FailureReason.SERVER_ERROR,
        "the badge server answered HTTP 503 (3 attempts)",
    )


@pytest.mark.parametrize("spelling", ["artifact://{}.pdf", "artifact:///{}.pdf"])
async def test_artifacts_come_from_the_coordinator_with_the_agent_token(
    http: HttpClient, coordinator: LiveCoordinator, kiosk: Kiosk,
    badge_pdf: bytes, spelling: str,
) -> None:  # fmt: skip
    sha256 = hashlib.sha256(badge_pdf).hexdigest()
    await kiosk.upload(badge_pdf, sha256)
    agent_fetcher = fetcher(http, coordinator.url)
    assert await agent_fetcher.fetch(spelling.format(sha256)) == badge_pdf
    missing = hashlib.sha256(b"nothing").hexdigest()
    assert await refusal(agent_fetcher.fetch(spelling.format(missing))) == (
        FailureReason.NOT_FOUND,
        "no badge there (HTTP 404)",
    )


async def test_malformed_refs_are_refused(http: HttpClient) -> None:
    assert await refusal(fetcher(http).fetch("artifact://badge.pdf")) == (
        FailureReason.BAD_REFERENCE,
        "artifact references are artifact://<sha256>.pdf",
    )
    reason, message = await refusal(fetcher(http).fetch("ftp://host/badge.pdf"))
    assert reason is FailureReason.BAD_REFERENCE and "unsupported scheme 'ftp'" in message
