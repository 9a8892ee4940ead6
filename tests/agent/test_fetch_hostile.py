"""Badge references a kiosk may send that must fail as the job's problem, quickly and classified.

Each refusal is a `FetchRefused` with a reason code and a text written by the
agent: nothing here may block, read a non-regular file, or raise anything else.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path

import pytest

from badgeline.agent.fetch import BadgeFetcher, FetchRefused
from badgeline.agent.http_client import HttpClient
from badgeline.protocol.failures import FailureReason, is_permanent
from tests.agent.conftest import local_sources
from tests.agent.hostile_server import FETCH_BOUND_S, HostileServer

LIMIT = 64 * 1024


@pytest.fixture
async def fetcher() -> AsyncIterator[BadgeFetcher]:
    async with HttpClient() as http:
        # Files under the temporary directory and /dev (to see a device refused as
        # one), this machine's servers.
        sources = local_sources(Path(tempfile.gettempdir()), Path("/dev"))
        yield BadgeFetcher(
            http, sources=sources, coordinator_url=None, artifact_headers={}, max_bytes=LIMIT,
            timeout_s=0.5, retry_initial_s=0.01,
        )  # fmt: skip


async def refusal(fetching: Awaitable[bytes]) -> FetchRefused:
    with pytest.raises(FetchRefused) as refused:
        async with asyncio.timeout(FETCH_BOUND_S):
            await fetching
    return refused.value


@pytest.mark.parametrize(
    ("ref", "reason"),
    [
        ("file:///tmp/x%00.pdf", FailureReason.BAD_REFERENCE),
        ("file:///tmp/x\x00.pdf", FailureReason.BAD_REFERENCE),
        ("file:///tmp/x%0d%0ainjected.pdf", FailureReason.BAD_REFERENCE),
        ("file:///tmp/x\r\n.pdf", FailureReason.BAD_REFERENCE),
        ("file:///tmp/../etc/badge.pdf", FailureReason.BAD_REFERENCE),
        ("file:///tmp/%2e%2e/etc/badge.pdf", FailureReason.BAD_REFERENCE),
        ("file://host/badge.pdf", FailureReason.BAD_REFERENCE),
        ("file:relative/badge.pdf", FailureReason.BAD_REFERENCE),
        ("file:///tmp/" + "a" * 5000 + ".pdf", FailureReason.BAD_REFERENCE),
        ("gopher://host/badge.pdf", FailureReason.BAD_REFERENCE),
        ("", FailureReason.BAD_REFERENCE),
    ],
)
async def test_unusable_references_are_refused_before_any_file_is_touched(
    fetcher: BadgeFetcher, ref: str, reason: FailureReason
) -> None:
    refused = await refusal(fetcher.fetch(ref))

    assert refused.reason is reason
    assert is_permanent(refused.reason)
    # The text is ours: no echo of control characters into logs or a kiosk's screen.
    assert not any(ord(character) < 0x20 for character in refused.message)


async def test_special_files_are_refused_without_reading_or_blocking(
    fetcher: BadgeFetcher, tmp_path: Path
) -> None:
    # GIVEN a FIFO nobody writes to (an open for reading would block for ever),
    # a directory, a device that never ends and a symlink loop, all named .pdf
    fifo = tmp_path / "fifo.pdf"
    os.mkfifo(fifo)
    directory = tmp_path / "folder.pdf"
    directory.mkdir()
    loop_a, loop_b = tmp_path / "a.pdf", tmp_path / "b.pdf"
    loop_a.symlink_to(loop_b)
    loop_b.symlink_to(loop_a)
    device = Path("/dev/zero")

    # WHEN each is fetched THEN each is refused as not a file, in bounded time
    for path, kind in [(fifo, "FIFO"), (directory, "directory"), (device, "character device")]:
        refused = await refusal(fetcher.fetch(path.as_uri()))
        assert refused.reason is FailureReason.NOT_A_FILE
        assert kind in refused.message
    looped = await refusal(fetcher.fetch(loop_a.as_uri()))
    assert (looped.reason, looped.message) == (
        FailureReason.NOT_A_FILE,
        "the badge reference names a symlink loop",
    )


async def test_a_symlink_to_a_regular_file_is_read(
    fetcher: BadgeFetcher, tmp_path: Path, badge_pdf: bytes
) -> None:
    real = tmp_path / "real.pdf"
    real.write_bytes(badge_pdf)
    link = tmp_path / "link.pdf"
    link.symlink_to(real)

    assert await fetcher.fetch(link.as_uri()) == badge_pdf


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/trickle.pdf", FailureReason.FETCH_TIMEOUT),
        ("/silent.pdf", FailureReason.FETCH_TIMEOUT),
        ("/loop.pdf", FailureReason.REFUSED),
        ("/flood.pdf", FailureReason.TOO_LARGE),
        ("/liar.pdf", FailureReason.NETWORK),
        ("/huge.pdf", FailureReason.TOO_LARGE),
    ],
)
async def test_misbehaving_badge_servers_end_the_fetch_with_a_classified_reason(
    fetcher: BadgeFetcher, hostile: HostileServer, path: str, reason: FailureReason
) -> None:
    refused = await refusal(fetcher.fetch(hostile.url + path))

    assert refused.reason is reason
    # Nothing the server sent is in the text a kiosk will read back.
    assert "%" not in refused.message and "xxx" not in refused.message
