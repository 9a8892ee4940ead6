"""Acks (invariant 6 from the coordinator's side): printed is terminal and
idempotent, failed goes back in line until max_attempts, uncertain is
re-dispatched flagged, and a late printed ack is always recorded, never refused."""

from __future__ import annotations

from typing import Any

from aiohttp.test_utils import TestClient

from tests.coordinator import flows
from tests.coordinator.conftest import MakeClient
from tests.helpers import wait_for

Client = TestClient[Any, Any]
FAST_RETRY = {"retry_backoff_unit_s": 0.01, "retry_backoff_cap_s": 0.05}


async def _printing(client: Client, **overrides: Any) -> tuple[str, str]:
    """A job that has been leased and granted: (job_id, lease_id)."""
    job_id = (await flows.submit(client, **overrides))["job_id"]
    leased = await flows.lease_one(client)
    assert leased["job_id"] == job_id
    await flows.start(client, job_id, leased["lease_id"])
    return job_id, leased["lease_id"]


async def _job_in(client: Client, job_id: str, state: str) -> Any:
    job = await flows.get_job(client, job_id)
    return job if job["state"] == state else None


async def test_a_printed_ack_is_terminal_and_idempotent(client: Client) -> None:
    job_id, lease_id = await _printing(client)
    # WHEN the agent's outbox sends the same printed ack twice
    first = await flows.ack(client, job_id, lease_id)
    second = await flows.ack(client, job_id, lease_id)
    # THEN both are 200, only the first changed anything
    assert first == {"job_id": job_id, "state": "printed", "recorded": True}
    assert second == {"job_id": job_id, "state": "printed", "recorded": False}
    job = await flows.get_job(client, job_id)
    assert job["state"] == "printed" and job["prints"] == 1
    assert [e["to"] for e in job["history"]] == ["queued", "leased", "printing", "printed"]


async def test_a_failed_ack_goes_back_in_line_then_fails_after_max_attempts(
    make_client: MakeClient,
) -> None:
    client = await make_client(max_attempts=2, **FAST_RETRY)
    job_id, lease_id = await _printing(client)
    # WHEN the first print fails
    first = await flows.ack(client, job_id, lease_id, result="failed", error="paper jam")
    assert first["recorded"] is True
    # THEN the job is back in its printer's queue with one attempt counted
    job = await wait_for(lambda: _job_in(client, job_id, "queued"), timeout_s=10)
    assert job["attempts"] == 1 and job["last_error"] == "paper jam"
    assert await flows.queue_ids(client) == [job_id]
    # AND the next lease carries the attempt count; the old lease can no longer start it
    again = await flows.lease_one(client)
    assert again["job"]["attempts"] == 1
    assert (await flows.start(client, job_id, lease_id, status=409))["reason"] == "lease_revoked"
    await flows.start(client, job_id, again["lease_id"])
    # WHEN the second print fails too (max_attempts = 2)
    final = await flows.ack(client, job_id, again["lease_id"], result="failed", error="cutter")
    # THEN the job is failed and dead-lettered with its reason
    assert final["state"] == "failed"
    job = await flows.get_job(client, job_id)
    assert job["state"] == "failed" and job["attempts"] == 2
    letters = {d["job_id"]: d for d in await flows.dead_letters(client)}
    assert "failed 2 times" in letters[job_id]["reason"]
    assert await flows.queue_ids(client) == []
    # AND a repeat of that failed ack changes nothing
    repeat = await flows.ack(client, job_id, again["lease_id"], result="failed", error="cutter")
    assert repeat["recorded"] is False and (await flows.get_job(client, job_id))["attempts"] == 2


async def test_an_uncertain_ack_redispatches_the_job_flagged_possible_duplicate(
    client: Client,
) -> None:
    job_id, lease_id = await _printing(client)
    # WHEN the agent cannot tell whether the badge came out
    answer = await flows.ack(client, job_id, lease_id, result="uncertain", error="power cut")
    # THEN the job is queued again, flagged, and the next lease says so
    assert answer["state"] == "queued"
    job = await flows.get_job(client, job_id)
    assert job["possible_duplicate"] is True and job["state"] == "queued"
    leased = await flows.lease_one(client)
    assert leased["job_id"] == job_id and leased["job"]["possible_duplicate"] is True


async def test_a_late_printed_ack_on_a_revoked_lease_is_recorded_not_refused(
    client: Client,
) -> None:
    # GIVEN a job re-dispatched after an uncertain ack, and granted to its new lease
    job_id, old_lease = await _printing(client)
    await flows.ack(client, job_id, old_lease, result="uncertain", error="lost power")
    new = await flows.lease_one(client)
    await flows.start(client, job_id, new["lease_id"])
    # WHEN the old lease's agent finally reports that it did print
    late = await flows.ack(client, job_id, old_lease)
    # THEN it is a 200, recorded: one physical print, noted as a late ack
    assert late["recorded"] is True
    job = await flows.get_job(client, job_id)
    assert job["state"] == "printed" and job["prints"] == 1
    assert "revoked lease" in job["history"][-1]["reason"]
    # WHEN the current lease prints it too
    current = await flows.ack(client, job_id, new["lease_id"])
    # THEN the second print is recorded as well: the job printed twice, in the open
    assert current["recorded"] is True
    assert (await flows.get_job(client, job_id))["prints"] == 2
    # AND a failed ack on the revoked lease is answered 200 and changes nothing
    stale = await flows.ack(client, job_id, old_lease, result="failed", error="late")
    assert stale == {"job_id": job_id, "state": "printed", "recorded": False}


async def test_a_late_printed_ack_takes_a_failed_job_off_the_dead_letter_list(
    make_client: MakeClient,
) -> None:
    client = await make_client(max_attempts=1, **FAST_RETRY)
    # GIVEN a job re-dispatched after an uncertain ack, whose retry then failed for good
    job_id, old_lease = await _printing(client)
    await flows.ack(client, job_id, old_lease, result="uncertain", error="lost power")
    new = await flows.lease_one(client)
    await flows.start(client, job_id, new["lease_id"])
    await flows.ack(client, job_id, new["lease_id"], result="failed", error="jam")
    assert [d["job_id"] for d in await flows.dead_letters(client)] == [job_id]
    # WHEN the first agent reports that its print did come out after all
    await flows.ack(client, job_id, old_lease)
    # THEN the job is printed, and no longer offered for redrive
    assert (await flows.get_job(client, job_id))["state"] == "printed"
    assert await flows.dead_letters(client) == []
    redriven = await flows.redrive(client, job_id)
    assert redriven[job_id]["outcome"] == "not_dead_lettered"


async def test_ack_bodies_are_validated(client: Client) -> None:
    job_id, lease_id = await _printing(client)
    path = f"/v1/agents/printer-a/jobs/{job_id}/ack"
    for body in (
        {"lease_id": lease_id, "result": "maybe"},
        {"lease_id": lease_id},
        {"lease_id": lease_id, "result": "printed", "extra": 1},
        {"lease_id": 7, "result": "printed"},
        {"lease_id": lease_id, "result": "failed", "error": "x" * 501},
    ):
        response = await client.post(path, json=body, headers=flows.agent())
        flows.assert_error_shape(await flows.expect(response, 422), "validation_failed")
    assert (await flows.get_job(client, job_id))["state"] == "printing"


async def test_an_ack_for_an_unknown_job_is_a_404(client: Client) -> None:
    response = await client.post(
        "/v1/agents/printer-a/jobs/job_0123456789abcdef/ack",
        json={"lease_id": "lease_x-1", "result": "printed"}, headers=flows.agent(),
    )  # fmt: skip
    flows.assert_error_shape(await flows.expect(response, 404), "not_found")


async def test_a_printed_ack_from_a_lease_never_granted_is_ignored(client: Client) -> None:
    # GIVEN a queued job and a lease of it that was never granted a start
    job_id = (await flows.submit(client))["job_id"]
    leased = await flows.lease_one(client)
    # WHEN a printed ack names that lease (or a made-up one)
    for lease_id in (leased["lease_id"], "lease_made_up-1"):
        answer = await flows.ack(client, job_id, lease_id, result="printed")
        # THEN it is answered (no retry storm) but recorded as nothing
        assert answer["recorded"] is False
    job = await flows.get_job(client, job_id)
    assert job["state"] == "leased" and job["prints"] == 0
    # AND the real holder can still start and print it
    assert (await flows.start(client, job_id, leased["lease_id"]))["granted"] is True
