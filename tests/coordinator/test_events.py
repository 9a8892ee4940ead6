"""GET /v1/events: every state change of a job, once and in order, to who may see it;
a stream resumed with Last-Event-ID, on this replica or another, misses nothing and
repeats nothing; an id it cannot resume from is a 410 that says what to do."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
from aiohttp.test_utils import TestClient
from redis.asyncio import Redis

from badgeline.coordinator.config import CoordinatorSettings
from badgeline.coordinator.store import Store
from tests.conftest import OTHER_KIOSK_TOKEN, auth
from tests.coordinator import flows
from tests.coordinator.conftest import MakeClient
from tests.coordinator.sse import Stream, stored_events
from tests.helpers import job_body, wait_for

Client = TestClient[Any, Any]
OTHER_KIOSK = auth(OTHER_KIOSK_TOKEN)
# queued -> leased -> printing -> printed
LIFE = [(None, "queued"), ("queued", "leased"), ("leased", "printing"), ("printing", "printed")]


async def open_stream(client: Client, headers: dict[str, str], query: str = "") -> Stream:
    response = await client.get("/v1/events" + query, headers=headers)
    assert response.status == 200, await response.text()
    assert response.headers["Content-Type"].startswith("text/event-stream")
    return Stream(response)


async def print_job(client: Client, job_id: str, printer_id: str = "printer-a") -> None:
    leased = await flows.lease_one(client, printer_id)
    assert leased["job_id"] == job_id
    await flows.start(client, job_id, leased["lease_id"], printer_id)
    await flows.ack(client, job_id, leased["lease_id"], printer_id=printer_id)


def changes(events: list[dict[str, Any]], job_id: str) -> list[tuple[str | None, str]]:
    return [(e["previous_state"], e["state"]) for e in events if e["job_id"] == job_id]


async def test_a_kiosk_sees_its_own_jobs_events_and_an_operator_every_one(
    client: Client, redis: Redis, settings: CoordinatorSettings
) -> None:
    await flows.heartbeat(client)
    # GIVEN a stream open for each kiosk and one for an operator
    mine = await open_stream(client, flows.KIOSK)
    theirs = await open_stream(client, OTHER_KIOSK)
    everything = await open_stream(client, flows.OPERATOR)
    # WHEN kiosk-1's job prints and kiosk-2's is accepted and canceled
    own = (await flows.submit(client))["job_id"]
    await print_job(client, own)
    other = await client.post("/v1/jobs", json=job_body(), headers=OTHER_KIOSK)
    other_id = (await flows.expect(other, 201))["job_id"]
    await flows.expect(await client.post(f"/v1/jobs/{other_id}/cancel", headers=OTHER_KIOSK), 200)
    # THEN kiosk-1 gets each change of its job, in order, and nothing of kiosk-2's
    seen = await mine.job_events(4)
    assert changes(seen, own) == LIFE and {e["job_id"] for e in seen} == {own}
    printing, printed = seen[2], seen[3]
    assert (printing["printer_id"], printing["fence"], printing["attempts"]) == ("printer-a", 1, 0)
    assert printed["at"] >= printing["at"] >= seen[0]["created_at"] > 0
    assert printed["idempotency_key"] and printed["reason"].startswith("printed by printer-a")
    # AND kiosk-2 only its own two
    assert changes(await theirs.job_events(2), other_id) == [
        (None, "queued"),
        ("queued", "canceled"),
    ]
    # AND the operator all six, in the stream's order (ids only grow)
    all_six = await everything.job_events(6)
    assert changes(all_six, own) == LIFE and len(changes(all_six, other_id)) == 2
    stored = [entry_id for entry_id, _ in await stored_events(redis, settings.venue)]
    assert [e["id"] for e in all_six] == stored
    # AND kiosk-1's next event is its next job's: nothing of kiosk-2's came between
    marker = (await flows.submit(client))["job_id"]
    assert [e["job_id"] for e in await mine.job_events(1)] == [marker]


async def test_a_dropped_stream_resumes_with_last_event_id_without_gap_or_repeat(
    client: Client, redis: Redis, settings: CoordinatorSettings
) -> None:
    await flows.heartbeat(client)
    jobs = [(await flows.submit(client))["job_id"] for _ in range(3)]
    # GIVEN a client that read two events after connecting, then lost its connection
    stream = await open_stream(client, flows.OPERATOR)
    await print_job(client, jobs[0])
    first = await stream.job_events(2)
    resume_from = stream.last_id
    assert resume_from == first[-1]["id"]
    stream.response.close()
    # WHILE changes go on without it
    await print_job(client, jobs[1])
    await flows.cancel(client, jobs[2])
    # WHEN it reconnects with Last-Event-ID (the header, then the query for clients without)
    for how in ({"headers": {**flows.OPERATOR, "Last-Event-ID": str(resume_from)}},
                {"headers": flows.OPERATOR, "query": f"?last_event_id={resume_from}"}):  # fmt: skip
        again = await open_stream(client, how["headers"], str(how.get("query", "")))
        rest = await again.job_events(1 + 3 + 1)
        # THEN it gets every event after that one, once, in the stream's order
        stored = [entry_id for entry_id, _ in await stored_events(redis, settings.venue)]
        after = stored[stored.index(str(resume_from)) + 1 :]
        assert [e["id"] for e in first + rest] == stored[stored.index(first[0]["id"]) :]
        assert [e["id"] for e in rest] == after
        assert changes(first + rest, jobs[0]) == LIFE[1:] == changes(rest, jobs[1])
        again.response.close()


async def test_the_stream_goes_on_from_another_replica_after_a_restart(
    make_client: MakeClient, redis: Redis, settings: CoordinatorSettings
) -> None:
    replica_a, replica_b = await make_client(), await make_client()
    await flows.heartbeat(replica_a)
    # GIVEN a kiosk following its job on replica A (a client of its own, as a kiosk is)
    job_id = (await flows.submit(replica_a))["job_id"]
    kiosk = aiohttp.ClientSession()
    response = await kiosk.get(replica_a.make_url("/v1/events"), headers=flows.KIOSK)
    stream = Stream(response)
    leased = await flows.lease_one(replica_a)
    assert [e["state"] for e in await stream.job_events(1)] == ["leased"]
    # WHEN replica A stops (the server ends its open streams) and the job goes on through B
    await asyncio.wait_for(replica_a.close(), timeout=10)
    assert await stream.ended()
    await kiosk.close()
    await flows.start(replica_b, job_id, leased["lease_id"])
    await flows.ack(replica_b, job_id, leased["lease_id"])
    # THEN the kiosk, reconnecting to B with its last id, gets the rest, once
    headers = {**flows.KIOSK, "Last-Event-ID": str(stream.last_id)}
    again = await open_stream(replica_b, headers)
    rest = await again.job_events(2)
    assert changes(rest, job_id) == [("leased", "printing"), ("printing", "printed")]
    # AND nothing it had already: its next event is its next job's
    marker = (await flows.submit(replica_b))["job_id"]
    assert [(e["job_id"], e["state"]) for e in await again.job_events(1)] == [(marker, "queued")]


async def test_an_id_the_stream_cannot_resume_from_is_410_saying_what_to_do(
    client: Client, redis: Redis, settings: CoordinatorSettings
) -> None:
    store = Store(redis, settings)
    # GIVEN a venue with well over a block (100) of events
    for _ in range(70):
        await flows.cancel(client, (await flows.submit(client))["job_id"])
    stored = [entry_id for entry_id, _ in await stored_events(redis, settings.venue)]
    ms, _, seq = stored[-1].partition("-")
    never = f"{int(ms) - 1}-{int(seq) + 99}"  # between two events, never one
    future = f"{int(ms) + 10**9}-0"
    # WHEN a client resumes from ids that name no event of it, THEN 410 and nothing streams
    for bad, reason in (("abc", "malformed"), ("17-x", "malformed"), (future, "unknown"),
                        (never, "unknown")):  # fmt: skip
        response = await client.get("/v1/events", headers={**flows.KIOSK, "Last-Event-ID": bad})
        body = await flows.expect(response, 410)
        flows.assert_error_shape(body, "event_id_gone")
        assert body["reason"] == reason, (bad, body)
        assert "reconnect without Last-Event-ID" in body["error"]["message"]
        assert "GET /v1/jobs/" in body["error"]["message"]
    # AND once the oldest events are trimmed (their age past event_retention_s), from them too
    await store.events.trim(0)
    remaining = [entry_id for entry_id, _ in await stored_events(redis, settings.venue)]
    assert stored[0] not in remaining, "the oldest block was trimmed"
    response = await client.get(f"/v1/events?last_event_id={stored[0]}", headers=flows.OPERATOR)
    assert (await flows.expect(response, 410))["reason"] == "trimmed"
    # AND from the newest it is a stream, trimmed or not: nothing came after it
    again = await open_stream(client, {**flows.OPERATOR, "Last-Event-ID": stored[-1]})
    again.response.close()


async def test_keep_alives_move_a_kiosks_resume_point_past_events_it_may_not_see(
    make_client: MakeClient,
) -> None:
    client = await make_client(event_keepalive_s=0.2)
    # GIVEN kiosk-2's stream, quiet while kiosk-1's jobs change
    stream = await open_stream(client, OTHER_KIOSK)
    connected = await stream.record()
    while connected.id is None:  # the `retry:` line comes first
        connected = await stream.record()
    for _ in range(3):
        await flows.submit(client)
    # WHEN it idles THEN keep-alive comments come, the first after those carrying a
    # resume point past kiosk-1's events, and never an event of theirs
    moved = None
    while moved is None:
        record = await stream.record(timeout_s=5)
        assert record.event is None and record.data == "", record
        assert "keep-alive" in record.comments
        if record.id is not None and record.id != connected.id:
            moved = record.id
    # AND resuming from it is a stream, not a 410, with nothing of kiosk-1's
    stream.response.close()
    again = await open_stream(client, {**OTHER_KIOSK, "Last-Event-ID": moved})
    own = (await client.post("/v1/jobs", json=job_body(), headers=OTHER_KIOSK)).status
    assert own == 201
    assert [e["state"] for e in await again.job_events(1)] == ["queued"]


async def test_a_caller_has_at_most_event_streams_per_caller_open(make_client: MakeClient) -> None:
    client = await make_client(event_streams_per_caller=2)
    streams = [await open_stream(client, flows.KIOSK) for _ in range(2)]
    third = await client.get("/v1/events", headers=flows.KIOSK)
    flows.assert_error_shape(await flows.expect(third, 429), "rate_limited")
    # another caller is not held back by this one's
    await open_stream(client, OTHER_KIOSK)
    streams[0].response.close()

    async def admitted() -> bool:
        response = await client.get("/v1/events", headers=flows.KIOSK)
        response.close()
        return response.status == 200

    await wait_for(admitted, timeout_s=5)
