"""A reprint asked for twice is one badge: the same `request_id` again (a double
click, a retry after a lost answer) gets the reprint it made, never a second one."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

from tests.ops.venue import Venue


async def _reprints_of(venue: Venue, job_id: str) -> list[str]:
    attendee = (await venue.job(job_id))["attendee_id"]
    listed = await venue.ops("GET", f"/v1/jobs?attendee_id={attendee}")
    return [j["job_id"] for j in listed["items"] if j["reprint_of"] == job_id]


async def test_the_same_request_id_again_answers_the_reprint_it_made(venue: Venue) -> None:
    original_id = await venue.printed_job()
    body = {"reason": "badge lost", "request_id": "desk-7-0001"}
    # GIVEN a reprint made under a request id
    first = await venue.ops("POST", f"/v1/jobs/{original_id}/reprint", body, status=201)
    # WHEN the same request comes again
    again = await venue.ops("POST", f"/v1/jobs/{original_id}/reprint", body, status=200)
    # THEN it is the same job, and only one reprint exists and prints
    assert again["job_id"] == first["job_id"] and again["reprint_of"] == original_id
    assert await _reprints_of(venue, original_id) == [first["job_id"]]
    assert await venue.agent("printer-a").print_next() == first["job_id"]
    assert await venue.agent("printer-a").lease() == []
    # AND another request id is another reprint, numbered after it
    other = await venue.ops("POST", f"/v1/jobs/{original_id}/reprint",
                            {**body, "request_id": "desk-7-0002"}, status=201)  # fmt: skip
    assert other["idempotency_key"] == f"reprint:{original_id}:2"


async def test_a_request_id_reused_for_another_reprint_is_a_conflict(venue: Venue) -> None:
    original_id = await venue.printed_job()
    body = {"reason": "badge lost", "request_id": "desk-7-0003"}
    first = await venue.ops("POST", f"/v1/jobs/{original_id}/reprint", body, status=201)
    # WHEN the same id asks for a different reprint (another priority)
    refused = await venue.ops("POST", f"/v1/jobs/{original_id}/reprint",
                              {**body, "priority": 5}, status=409)  # fmt: skip
    # THEN it is refused, naming the id and the reprint it made; nothing new is queued
    assert refused["error"]["code"] == "idempotency_conflict"
    assert "desk-7-0003" in refused["error"]["message"]
    assert refused["job_id"] == first["job_id"]
    assert await _reprints_of(venue, original_id) == [first["job_id"]]


async def test_a_malformed_request_id_is_refused_by_name(venue: Venue) -> None:
    original_id = await venue.printed_job()
    refused = await venue.ops("POST", f"/v1/jobs/{original_id}/reprint",
                              {"reason": "lost", "request_id": "a b"}, status=422)  # fmt: skip
    assert [f["loc"] for f in refused["error"]["fields"]] == [["request_id"]]
    assert await _reprints_of(venue, original_id) == []


@contextlib.asynccontextmanager
async def answer_losing_proxy(target_url: str, lose: int) -> AsyncIterator[str]:
    """A TCP proxy to `target_url` whose first `lose` connections carry the request
    to the coordinator but hang up before its answer reaches the caller."""
    target = urlsplit(target_url)
    lost = 0

    async def pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            while data := await source.read(65536):
                sink.write(data)
                await sink.drain()

    async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal lost
        losing = lost < lose
        lost += losing
        up_reader, up_writer = await asyncio.open_connection(target.hostname, target.port)
        upstream = asyncio.create_task(pump(reader, up_writer))
        try:
            if losing:
                await up_reader.read()  # the whole answer (the CLI asks to close after it)
            else:
                await pump(up_reader, writer)
        finally:
            upstream.cancel()
            up_writer.close()
            writer.close()

    server = await asyncio.start_server(relay, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.close()
        await server.wait_closed()


async def test_the_cli_retries_a_lost_answer_without_a_second_badge(venue: Venue) -> None:
    original_id = await venue.printed_job()
    # GIVEN a network that loses the coordinator's first answer
    async with answer_losing_proxy(venue.url, lose=1) as url:
        # WHEN the operator reprints through it
        result = await dataclasses.replace(venue, url=url).cli_ok(
            "reprint", original_id, "--reason", "badge lost"
        )
    # THEN the CLI found the reprint its lost request made, and there is only that one
    (reprint_id,) = await _reprints_of(venue, original_id)
    assert f"accepted as {reprint_id}" in result.out


async def test_a_reprint_whose_answer_is_lost_twice_names_the_id_to_finish_it(
    venue: Venue,
) -> None:
    original_id = await venue.printed_job()
    async with answer_losing_proxy(venue.url, lose=2) as url:
        result = await dataclasses.replace(venue, url=url).cli(
            "reprint", original_id, "--reason", "badge lost"
        )
    # THEN one line says it may be made, with the id that finishes it safely
    assert result.code == 3 and result.out == ""
    (line,) = result.err.strip().splitlines()
    request_id = line.rsplit("--request-id ", 1)[1].split()[0]
    # AND running the command again with that id answers the one reprint made
    again = await venue.cli_ok(
        "reprint", original_id, "--reason", "badge lost", "--request-id", request_id
    )
    (reprint_id,) = await _reprints_of(venue, original_id)
    assert f"accepted as {reprint_id}" in again.out
