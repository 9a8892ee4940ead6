"""Badge sources are an allow-list: a kiosk can name neither the Pi's files nor the venue LAN.

Each reference below must fail as `not_allowed`, with one and the same text
whatever the reason (nothing about the Pi or the network leaks through it),
and a server it names outside the list is never even connected to.
"""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from badgeline.agent.config import AgentSettings
from badgeline.agent.fetch import BadgeFetcher, FetchRefused
from badgeline.agent.http_client import HttpClient
from badgeline.agent.sources import BadgeSources, HostRule, is_public
from badgeline.protocol.failures import FailureReason

NOT_ALLOWED_TEXT = "the badge reference is not among the sources this agent may fetch from"


class Server:
    """A badge server on loopback that counts the requests it gets and redirects on ask."""

    def __init__(self, pdf: bytes) -> None:
        self.pdf = pdf
        self.requests = 0
        self.redirect_to = ""
        self.server: TestServer | None = None

    @property
    def port(self) -> int:
        assert self.server is not None and self.server.port is not None
        return self.server.port

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/badge.pdf", self._badge)
        app.router.add_get("/moved.pdf", self._moved)
        self.server = TestServer(app, host="127.0.0.1")
        await self.server.start_server()

    async def _badge(self, request: web.Request) -> web.Response:
        self.requests += 1
        return web.Response(body=self.pdf, content_type="application/pdf")

    async def _moved(self, request: web.Request) -> web.Response:
        self.requests += 1
        raise web.HTTPFound(self.redirect_to)


@pytest.fixture
async def server(badge_pdf: bytes) -> AsyncIterator[Server]:
    badge_server = Server(badge_pdf)
    await badge_server.start()
    yield badge_server
    assert badge_server.server is not None
    await badge_server.server.close()


async def refused(sources: BadgeSources, ref: str) -> FetchRefused:
    async with HttpClient() as http:
        fetcher = BadgeFetcher(http, sources=sources, coordinator_url=None, artifact_headers={},
                               max_bytes=1 << 20, timeout_s=2)  # fmt: skip
        with pytest.raises(FetchRefused) as refusal:
            async with asyncio.timeout(10):
                await fetcher.fetch(ref)
    return refusal.value


async def fetched(sources: BadgeSources, ref: str) -> bytes:
    async with HttpClient() as http:
        fetcher = BadgeFetcher(http, sources=sources, coordinator_url=None, artifact_headers={},
                               max_bytes=1 << 20, timeout_s=2)  # fmt: skip
        return await fetcher.fetch(ref)


def assert_not_allowed(refusal: FetchRefused) -> None:
    assert (refusal.reason, refusal.message) == (FailureReason.NOT_ALLOWED, NOT_ALLOWED_TEXT)


async def test_files_outside_the_roots_are_refused_the_same_whether_they_exist_or_not(
    tmp_path: Path, badge_pdf: bytes
) -> None:
    # GIVEN an agent that may read badges from one folder
    root = tmp_path / "badges"
    root.mkdir()
    (root / "good.pdf").write_bytes(badge_pdf)
    secret = tmp_path / "secret.pdf"
    secret.write_bytes(badge_pdf)
    secret.chmod(0o600)
    (root / "link-out.pdf").symlink_to(secret)
    (root / "link-in.pdf").symlink_to(root / "good.pdf")
    sources = BadgeSources("printer-a", [root], [])
    # THEN a badge in it prints, through a symlink that stays in it too
    assert await fetched(sources, (root / "good.pdf").as_uri()) == badge_pdf
    assert await fetched(sources, (root / "link-in.pdf").as_uri()) == badge_pdf
    # AND a file outside it, existing or not, or a symlink out of it, is refused alike
    for ref in [secret.as_uri(), (tmp_path / "nothing.pdf").as_uri(), "file:///etc/hostname.pdf",
                (root / "link-out.pdf").as_uri()]:  # fmt: skip
        assert_not_allowed(await refused(sources, ref))


async def test_with_no_roots_no_file_is_read(tmp_path: Path, badge_pdf: bytes) -> None:
    (tmp_path / "badge.pdf").write_bytes(badge_pdf)
    assert_not_allowed(await refused(BadgeSources("printer-a", [], []),
                                     (tmp_path / "badge.pdf").as_uri()))  # fmt: skip


@pytest.mark.parametrize(
    "target",
    [
        "http://127.0.0.1:{port}/badge.pdf",  # a port the list does not name
        "http://10.11.12.13/badge.pdf",  # a private address
        "http://169.254.169.254/latest/meta-data.pdf",  # link-local (cloud metadata)
        "http://[::1]:{port}/badge.pdf",  # loopback over IPv6
        "http://localhost:{port}/badge.pdf",  # a name that is not listed
        "https://other.example.org/badge.pdf",
    ],
)
async def test_hosts_outside_the_list_are_refused_and_never_contacted(
    server: Server, target: str
) -> None:
    # GIVEN an agent allowed one named host and nothing on loopback but one other port
    sources = BadgeSources("printer-a", [], ["badges.example.org", "127.0.0.1:1"])
    # WHEN a kiosk names another host (or port)
    refusal = await refused(sources, target.format(port=server.port))
    # THEN it is refused, and the server there never got a request
    assert_not_allowed(refusal)
    assert server.requests == 0


async def test_a_name_that_resolves_to_loopback_needs_an_address_entry(server: Server) -> None:
    # "localhost" is listed, but it resolves to loopback, which only an address entry opens
    named = BadgeSources("printer-a", [], [f"localhost:{server.port}"])
    assert_not_allowed(await refused(named, f"http://localhost:{server.port}/badge.pdf"))
    assert server.requests == 0
    both = BadgeSources("printer-a", [], [f"localhost:{server.port}", "127.0.0.0/8:*"])
    assert await fetched(both, f"http://localhost:{server.port}/badge.pdf") == server.pdf


@pytest.mark.parametrize(
    ("redirect", "reason"),
    [
        ("http://127.0.0.1:{other}/badge.pdf", FailureReason.NOT_ALLOWED),  # another port
        ("http://10.0.0.1/badge.pdf", FailureReason.NOT_ALLOWED),  # the venue LAN
        ("http://[::1]:{port}/badge.pdf", FailureReason.NOT_ALLOWED),  # loopback by v6
        ("file:///etc/passwd", FailureReason.REFUSED),  # another scheme
        ("/badge.pdf", None),  # the same server: followed
    ],
)
async def test_redirects_stay_within_the_list(
    server: Server, redirect: str, reason: FailureReason | None
) -> None:
    # GIVEN an allowed server that redirects
    sources = BadgeSources("printer-a", [], [f"127.0.0.1:{server.port}"])
    server.redirect_to = redirect.format(port=server.port, other=server.port + 1)
    ref = f"http://127.0.0.1:{server.port}/moved.pdf"
    # THEN a redirect within the list is followed, and any other refused
    if reason is None:
        assert await fetched(sources, ref) == server.pdf
        return
    refusal = await refused(sources, ref)
    assert refusal.reason is reason
    if reason is FailureReason.NOT_ALLOWED:
        assert_not_allowed(refusal)


@pytest.mark.parametrize(
    ("address", "public"),
    [("8.8.8.8", True), ("10.0.0.1", False), ("172.16.5.4", False), ("192.168.1.1", False),
     ("127.0.0.1", False), ("169.254.1.1", False), ("0.0.0.0", False), ("224.0.0.251", False),
     ("100.64.0.1", False), ("::1", False), ("fe80::1", False), ("fd00::1", False),
     ("::ffff:10.0.0.1", False), ("::ffff:8.8.8.8", True), ("2001:4860:4860::8888", True)],
)  # fmt: skip
def test_which_addresses_count_as_public(address: str, public: bool) -> None:
    assert is_public(ipaddress.ip_address(address)) is public


@pytest.mark.parametrize(
    "entry", ["badges.example.org", "*.example.org", "10.0.0.5", "10.0.0.0/24", "host:8080",
              "[fd00::1]:8443", "fd00::/64", "127.0.0.1:*"],
)  # fmt: skip
def test_allow_list_entries_that_parse(entry: str) -> None:
    HostRule.parse(entry)


@pytest.mark.parametrize(
    "entry", ["http://badges.example.org", "bad host", "host:99999", "host:port", "*", ""]
)
def test_a_malformed_entry_stops_the_agent_at_start_up(entry: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"not a host name|the port must be"):
        AgentSettings(printer_id="printer-a", printer={"kind": "emulator", "host": "x"},
                      state_dir=tmp_path, badge_http_hosts=[entry])  # fmt: skip


def test_relative_file_roots_stop_the_agent_at_start_up(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not an absolute path"):
        AgentSettings(printer_id="printer-a", printer={"kind": "emulator", "host": "x"},
                      state_dir=tmp_path, badge_file_roots=["badges"])  # fmt: skip
