"""The dashboard's live picture: the SSE stream and the snapshot it pushes."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
from redis.asyncio import Redis

from badgeline.coordinator.app import create_app
from badgeline.coordinator.config import CoordinatorSettings
from tests.conftest import KIOSK_TOKEN, OPERATOR_TOKEN, agent_token, auth
from tests.dashboard.conftest import Client, sign_in
from tests.helpers import job_body, wait_for

HEALTHY = {"reachable": True, "jammed": False, "cover_open": False, "paper": "ok"}


async def beat(client: Client, printer_id: str, **health: Any) -> None:
    response = await client.post(
        f"/v1/agents/{printer_id}/heartbeat", headers=auth(agent_token(printer_id)),
        json={"agent_id": f"pi-{printer_id}", "version": "t", "health": {**HEALTHY, **health}},
    )  # fmt: skip
    assert response.status == 200


async def submit(client: Client, printer_id: str) -> aiohttp.ClientResponse:
    return await client.post("/v1/jobs", json=job_body(printer_id), headers=auth(KIOSK_TOKEN))


async def next_snapshot(stream: aiohttp.ClientResponse, timeout_s: float = 5.0) -> Any:
    """Read SSE lines until one whole `snapshot` event has arrived."""

    async def read() -> Any:
        event = None
        while True:
            line = (await stream.content.readline()).decode().rstrip("\n")
            if line.startswith("event: "):
                event = line.removeprefix("event: ")
            elif line.startswith("data: ") and event == "snapshot":
                return json.loads(line.removeprefix("data: "))

    return await asyncio.wait_for(read(), timeout_s)


def printer(snapshot: Any, printer_id: str) -> Any:
    return next(p for p in snapshot["printers"] if p["printer_id"] == printer_id)


async def test_the_stream_pushes_every_second_and_at_once_on_new_work(
    client: Client, csrf: str
) -> None:
    await beat(client, "printer-a")
    async with client.get("/dashboard/stream") as stream:
        assert stream.status == 200
        assert stream.headers["Content-Type"].startswith("text/event-stream")
        first = await next_snapshot(stream)
        assert printer(first, "printer-a")["state"] == "healthy"
        assert printer(first, "printer-a")["queue_depth"] == 0
        # Same JSON as the operator routes, plus the dashboard's own sections;
        # endpoints this coordinator lacks are reported, not fatal.
        route = (await (await client.get("/v1/printers")).json())["items"]
        assert [sorted(p) for p in first["printers"]] == [sorted(p) for p in route]
        for section in ("reconcile", "stats", "alerts", "dead_letters"):
            assert isinstance(first[section], dict), section
        # A tick comes without any change...
        await next_snapshot(stream, timeout_s=3)
        # ...and new work shows up in a later push (the queue's wake-up triggers one;
        # how soon is a benchmark's question, not a test's).
        await next_snapshot(stream)
        assert (await submit(client, "printer-a")).status == 201
        while printer(await next_snapshot(stream), "printer-a")["queue_depth"] != 1:
            pass


async def test_the_stream_takes_a_bearer_token_too(client: Client) -> None:
    headers = {**auth(OPERATOR_TOKEN), "X-Correlation-ID": "ops-desk:stream-1"}
    async with client.get("/dashboard/stream", headers=headers) as stream:
        assert stream.status == 200
        # like every answer, the stream's carries the request's correlation id
        assert stream.headers["X-Correlation-ID"] == "ops-desk:stream-1"
        assert "printers" in await next_snapshot(stream)
    kiosk = await client.get("/dashboard/stream", headers=auth(KIOSK_TOKEN))
    assert kiosk.status == 403


async def test_signing_out_ends_an_open_stream(client: Client, csrf: str) -> None:
    async with client.get("/dashboard/stream") as stream:
        await next_snapshot(stream)
        signed_out = await client.post("/dashboard/logout", headers={"X-CSRF-Token": csrf})
        assert signed_out.status == 200

        async def until_closed() -> None:
            while await stream.content.readline():
                pass

        # At most one more push, then the server ends the stream (EOF).
        await asyncio.wait_for(until_closed(), timeout=5)
    assert (await client.get("/dashboard/stream")).status == 401


async def test_an_open_stream_does_not_hold_up_shutdown(client: Client, csrf: str) -> None:
    stream = await client.get("/dashboard/stream")
    await next_snapshot(stream)
    # THEN closing the app finishes (bounded only as a hang guard)
    await asyncio.wait_for(client.close(), timeout=10)


async def test_snapshot_shows_dead_letters_parked_jobs_and_failovers(
    redis: Redis, settings: CoordinatorSettings, aiohttp_client: Any
) -> None:
    tuned = settings.model_copy(update={"high_water_mark": 2, "monitor_interval_s": 0.05})
    client: Client = await aiohttp_client(create_app(tuned, redis))
    await sign_in(client)
    await beat(client, "printer-a")
    # GIVEN a full queue on the only printer: the third job is shed to the dead letters
    assert [(await submit(client, "printer-a")).status for _ in range(3)] == [201, 201, 503]
    # WHEN the only printer jams, its queue has nowhere to go and is parked
    await beat(client, "printer-a", jammed=True)

    async def parked() -> Any:
        snapshot = await (await client.get("/dashboard/snapshot")).json()
        return snapshot if snapshot["parked"]["count"] == 2 else None

    snapshot = await wait_for(parked, timeout_s=5)
    assert printer(snapshot, "printer-a")["state"] == "dead"
    assert snapshot["dead_letter_count"] == 1
    [letter] = snapshot["dead_letters"]["items"]
    assert letter["reason"].startswith("backpressure"), letter
    [decision] = snapshot["failovers"]
    assert decision["dead_printer_id"] == "printer-a"
    parked_ids = sorted(job["job_id"] for job in snapshot["parked"]["jobs"])
    assert sorted(decision["parked_job_ids"]) == parked_ids
    assert snapshot["high_water_mark"] == 2


async def test_open_dashboards_share_one_reading_of_the_slow_sections(
    client: Client, monkeypatch: Any
) -> None:
    # Ten operators watching must not cost ten reconciliations every few seconds:
    # a second page gets the reading the first one took (until it ages out or
    # the dead-letter count moves).
    monkeypatch.setattr("badgeline.coordinator.api.dashboard_snapshot.SLOW_SECTIONS_EVERY_S", 60.0)
    async with client.get("/dashboard/stream", headers=auth(OPERATOR_TOKEN)) as first:
        before = (await next_snapshot(first))["reconcile"]["counts"]["accepted"]
        assert (await submit(client, "printer-a")).status == 201
        fresh = await client.get("/v1/reconcile", headers=auth(OPERATOR_TOKEN))
        assert (await fresh.json())["counts"]["accepted"] == before + 1
        async with client.get("/dashboard/stream", headers=auth(OPERATOR_TOKEN)) as second:
            shared = (await next_snapshot(second))["reconcile"]["counts"]["accepted"]
    assert shared == before
