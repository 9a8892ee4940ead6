"""The checkers read jobs back through the replicas' API: a job that every replica
says is not there is absent, but a read that failed for another reason (a 503 while
Redis restarts) is tried again, so that it is not counted as lost."""

from __future__ import annotations

import collections
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from tests.chaos.harness import run
from tests.chaos.harness.venue import ChaosVenue

UNAVAILABLE_READS = 2  # answers of 503 before job_flaky reads back


@pytest.fixture
async def replica_port() -> AsyncIterator[tuple[int, collections.Counter[str]]]:
    asked: collections.Counter[str] = collections.Counter()

    async def job(request: web.Request) -> web.Response:
        job_id = request.match_info["job_id"]
        asked[job_id] += 1
        if job_id == "job_missing":
            return web.json_response({"code": "not_found"}, status=404)
        if job_id == "job_flaky" and asked[job_id] <= UNAVAILABLE_READS:
            return web.json_response({"code": "store_unavailable"}, status=503)
        return web.json_response({"job_id": job_id, "state": "printed"})

    app = web.Application()
    app.router.add_get("/v1/jobs/{job_id}", job)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    yield port, asked
    await runner.cleanup()


async def test_a_job_unreadable_for_a_moment_is_read_again_and_a_missing_one_is_not(
    tmp_path: Path,
    replica_port: tuple[int, collections.Counter[str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    port, asked = replica_port
    monkeypatch.setattr(run, "FETCH_RETRY_S", 0.01)
    venue = ChaosVenue(tmp_path, ("printer-a",), coordinators=2)
    for replica in venue.replicas:
        replica.port = port  # both replicas are the one server above
    async with aiohttp.ClientSession() as session:
        venue._session = session
        views = await run.fetch_jobs(venue, ["job_flaky", "job_missing", "job_fine"])

    assert sorted(views) == ["job_fine", "job_flaky"]
    assert views["job_flaky"]["state"] == "printed"
    assert asked["job_flaky"] == UNAVAILABLE_READS + 1
    assert asked["job_missing"] == 2  # once per replica, never again
    assert asked["job_fine"] == 1
