"""Oversized bodies and slow-loris clients are bounded, over raw sockets.

The coordinator runs with the runner and site main.py builds (its keep-alive
timer and body deadline), on a real port: a client trickling its head or its
body is cut off, an oversized body is a 413, and nothing is written.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from redis.asyncio import Redis

from badgeline.coordinator.config import CoordinatorSettings
from badgeline.coordinator.main import make_runner, make_site
from tests.conftest import KIOSK_TOKEN
from tests.coordinator import flows
from tests.helpers import job_body

SLOW = {"client_idle_timeout_s": 1.0, "body_timeout_s": 1.0, "listen_port": 0}
# Long enough that a trickle outlives every timeout above many times over.
GIVE_UP_S = 30.0


@dataclass
class Served:
    host: str
    port: int


@pytest.fixture
async def served(redis: Redis, settings: CoordinatorSettings) -> AsyncIterator[Served]:
    tuned = settings.model_copy(update=SLOW)
    runner = make_runner(tuned, redis)
    await runner.setup()
    await make_site(runner, tuned, None).start()
    host, port = runner.addresses[0][:2]
    yield Served(host, port)
    await runner.cleanup()


@dataclass
class Reply:
    raw: bytes
    closed: bool

    @property
    def status(self) -> int:
        return int(self.raw.split(b" ", 2)[1])

    def json(self) -> Any:
        return json.loads(self.raw.split(b"\r\n\r\n", 1)[1])


async def _trickle(served: Served, head: bytes, drip: bytes) -> Reply:
    """Send `head`, then `drip` one byte at a time until the server answers or hangs up."""
    reader, writer = await asyncio.open_connection(served.host, served.port)
    answer = b""
    try:
        writer.write(head)
        await writer.drain()
        deadline = asyncio.get_running_loop().time() + GIVE_UP_S
        for byte in drip * 1000:
            with contextlib.suppress(TimeoutError):
                answer += await asyncio.wait_for(reader.read(65536), 0.1)
            if reader.at_eof() or asyncio.get_running_loop().time() > deadline:
                break
            writer.write(bytes([byte]))
            await writer.drain()
        answer += await asyncio.wait_for(reader.read(), GIVE_UP_S)
        return Reply(answer, closed=reader.at_eof())
    except (ConnectionResetError, BrokenPipeError):
        return Reply(answer, closed=True)
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


def _submit_head(length: int, path: str = "/v1/jobs", method: str = "POST",
                 content_type: str = "application/json") -> bytes:  # fmt: skip
    return (f"{method} {path} HTTP/1.1\r\nHost: test\r\n"
            f"Authorization: Bearer {KIOSK_TOKEN}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {length}\r\n\r\n").encode()  # fmt: skip


async def test_a_client_trickling_its_headers_is_cut_off(served: Served) -> None:
    # GIVEN a client that sends a request line and then one header byte at a time
    head = b"GET /healthz HTTP/1.1\r\nHost: test\r\n"
    # WHEN it keeps trickling
    reply = await _trickle(served, head, b"X-Slow: aaaaaaaaaa\r\n")
    # THEN the coordinator hangs up without ever answering
    assert reply.closed and reply.raw == b""


async def test_a_connection_that_never_sends_is_closed(served: Served) -> None:
    reader, writer = await asyncio.open_connection(served.host, served.port)
    try:
        assert await asyncio.wait_for(reader.read(), GIVE_UP_S) == b""
    finally:
        writer.close()


async def test_a_client_trickling_its_body_gets_a_408_and_nothing_is_written(
    served: Served, redis: Redis, settings: CoordinatorSettings
) -> None:
    # GIVEN a job body announced in full and then sent one byte at a time
    body = json.dumps(job_body()).encode()
    before = await flows.venue_snapshot(redis, settings.venue)
    # WHEN the client keeps trickling
    reply = await _trickle(served, _submit_head(len(body)), body)
    # THEN the coordinator answers 408 in the error shape and closes the connection
    assert reply.status == 408, reply.raw[:300]
    flows.assert_error_shape(reply.json(), "request_timeout")
    assert reply.closed
    # AND no job was written
    assert await flows.venue_snapshot(redis, settings.venue) == before


async def test_a_trickled_artifact_upload_is_cut_off_too(served: Served) -> None:
    pdf = b"%PDF-1.4\n" + b"0" * 4000
    head = _submit_head(len(pdf), f"/v1/artifacts/{'0' * 64}.pdf", "PUT", "application/pdf")
    reply = await _trickle(served, head, pdf)
    assert reply.status == 408, reply.raw[:300]
    flows.assert_error_shape(reply.json(), "request_timeout")


async def test_a_long_poll_outlives_both_timeouts(served: Served) -> None:
    # GIVEN an agent's long-poll that waits twice the idle and body timeouts
    reader, writer = await asyncio.open_connection(served.host, served.port)
    writer.write(b"POST /v1/agents/printer-a/lease?wait=2 HTTP/1.1\r\nHost: test\r\n"
                 b"Authorization: Bearer agent-token-printer-a\r\nContent-Length: 0\r\n"
                 b"Connection: close\r\n\r\n")  # fmt: skip
    await writer.drain()
    # WHEN it ends, THEN it ended with an answer, not a cut
    raw = await asyncio.wait_for(reader.read(), GIVE_UP_S)
    writer.close()
    assert raw.startswith(b"HTTP/1.1 200"), raw[:300]
    assert json.loads(raw.split(b"\r\n\r\n", 1)[1]) == {"jobs": []}


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
async def test_an_oversized_body_is_a_413_and_nothing_is_written(
    served: Served, redis: Redis, settings: CoordinatorSettings, chunked: bool
) -> None:
    # GIVEN a job body padded past max_body_bytes
    body = json.dumps(job_body(badge_pdf_ref="https://x/" + "a" * settings.max_body_bytes +
                                             ".pdf")).encode()  # fmt: skip
    if chunked:
        framing = b"Transfer-Encoding: chunked\r\n\r\n"
        payload = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    else:
        framing = b"Content-Length: %d\r\n\r\n" % len(body)
        payload = body
    head = (b"POST /v1/jobs HTTP/1.1\r\nHost: test\r\nConnection: close\r\n"
            b"Authorization: Bearer " + KIOSK_TOKEN.encode() + b"\r\n"
            b"Content-Type: application/json\r\n" + framing)  # fmt: skip
    before = await flows.venue_snapshot(redis, settings.venue)
    # WHEN it is sent
    reader, writer = await asyncio.open_connection(served.host, served.port)
    writer.write(head + payload)
    with contextlib.suppress(ConnectionResetError):
        await writer.drain()
    raw = await asyncio.wait_for(reader.read(), GIVE_UP_S)
    writer.close()
    # THEN it is refused in the error shape, and nothing was written
    reply = Reply(raw, closed=True)
    assert reply.status == 413, raw[:300]
    flows.assert_error_shape(reply.json(), "body_too_large")
    assert await flows.venue_snapshot(redis, settings.venue) == before


async def test_a_header_over_the_parser_limit_is_refused(served: Served) -> None:
    # aiohttp's parser answers this itself (before any coordinator code runs), so the
    # body is aiohttp's plain text, not the JSON error shape: see docs/api.md.
    reader, writer = await asyncio.open_connection(served.host, served.port)
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: test\r\nX-Big: " + b"a" * 20_000 + b"\r\n\r\n")
    with contextlib.suppress(ConnectionResetError):
        await writer.drain()
    raw = await asyncio.wait_for(reader.read(), GIVE_UP_S)
    writer.close()
    assert re.match(rb"HTTP/1\.[01] 4\d\d ", raw), raw[:300]
    assert reader.at_eof()
