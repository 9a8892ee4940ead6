"""Failures the agent classifies: a permanent one fails the job at once and is never
redriven, a transient one retries; and a failure reported after its lease expired
still counts as an attempt, once, so a badge that always outlasts its lease ends."""

from __future__ import annotations

from typing import Any

from aiohttp.test_utils import TestClient

from tests.coordinator import flows
from tests.coordinator.conftest import MakeClient
from tests.helpers import wait_for

Client = TestClient[Any, Any]
FAST = {"retry_backoff_unit_s": 0.01, "retry_backoff_cap_s": 0.05, "max_attempts": 5}


async def _state(client: Client, job_id: str, state: str) -> Any:
    job = await flows.get_job(client, job_id)
    return job if job["state"] == state else None


async def test_a_permanent_failure_fails_the_job_at_once_and_redrive_refuses_it(
    make_client: MakeClient,
) -> None:
    client = await make_client(**FAST)
    # GIVEN a leased job whose badge PDF has no embedded fonts
    job_id = (await flows.submit(client))["job_id"]
    leased = await flows.lease_one(client)
    # WHEN the agent reports it failed for that reason (before any grant)
    answer = await flows.ack(client, job_id, leased["lease_id"], result="failed",
                             error="fonts not embedded", reason="font_not_embedded")  # fmt: skip
    # THEN it is failed at its first attempt, though max_attempts is 5
    assert answer == {"job_id": job_id, "state": "failed", "recorded": True}
    job = await flows.get_job(client, job_id)
    assert (job["attempts"], job["failure_reason"], job["failed_for_good"]) == (
        1,
        "font_not_embedded",
        True,
    )
    assert "no retry can change" in job["history"][-1]["reason"]
    assert await flows.queue_ids(client) == []
    # AND a redrive says why it will not put it back in line
    outcome = (await flows.redrive(client, job_id))[job_id]
    assert outcome["outcome"] == "refused"
    assert "font_not_embedded" in outcome["detail"] and "new job" in outcome["detail"]
    assert (await flows.get_job(client, job_id))["state"] == "failed"


async def test_a_transient_failure_retries_with_back_off(make_client: MakeClient) -> None:
    client = await make_client(**FAST)
    job_id = (await flows.submit(client))["job_id"]
    leased = await flows.lease_one(client)

    answer = await flows.ack(client, job_id, leased["lease_id"], result="failed",
                             error="badge server unreachable", reason="network")  # fmt: skip

    assert answer["state"] == "retrying"
    job = await wait_for(lambda: _state(client, job_id, "queued"), timeout_s=10)
    assert (job["attempts"], job["failure_reason"], job["failed_for_good"]) == (1, "network", False)


async def test_a_failure_reported_after_the_lease_expired_counts_once(
    make_client: MakeClient,
) -> None:
    client = await make_client(lease_ttl_s=1.0, lease_scan_interval_s=0.05, **FAST)
    # GIVEN a lease that expired while its agent was still fetching the badge
    job_id = (await flows.submit(client))["job_id"]
    late = await flows.lease_one(client)
    await wait_for(lambda: _state(client, job_id, "queued"), timeout_s=10)
    # WHEN the agent then reports the failure (twice: its outbox repeats until confirmed)
    first = await flows.ack(client, job_id, late["lease_id"], result="failed",
                            error="the badge server is slow", reason="fetch_timeout")  # fmt: skip
    again = await flows.ack(client, job_id, late["lease_id"], result="failed",
                            error="the badge server is slow", reason="fetch_timeout")  # fmt: skip
    # THEN it counts as one attempt, and the job stays in line for another try
    assert (first["recorded"], again["recorded"]) == (True, False)
    job = await flows.get_job(client, job_id)
    assert (job["state"], job["attempts"], job["failure_reason"]) == ("queued", 1, "fetch_timeout")


async def test_a_late_permanent_failure_fails_the_waiting_job(make_client: MakeClient) -> None:
    client = await make_client(lease_ttl_s=1.0, lease_scan_interval_s=0.05, **FAST)
    job_id = (await flows.submit(client))["job_id"]
    late = await flows.lease_one(client)
    await wait_for(lambda: _state(client, job_id, "queued"), timeout_s=10)

    answer = await flows.ack(client, job_id, late["lease_id"], result="failed",
                             error="not a PDF", reason="not_a_pdf")  # fmt: skip

    assert answer["state"] == "failed"
    job = await flows.get_job(client, job_id)
    assert (
        job["failed_for_good"] is True
        and "after its lease expired" in (job["history"][-1]["reason"])
    )
    assert await flows.queue_ids(client) == []


async def test_an_unknown_reason_is_a_422_naming_the_field(client: Client) -> None:
    job_id = (await flows.submit(client))["job_id"]
    leased = await flows.lease_one(client)
    response = await client.post(
        f"/v1/agents/printer-a/jobs/{job_id}/ack",
        json={"lease_id": leased["lease_id"], "result": "failed", "reason": "gremlins"},
        headers=flows.agent(),
    )
    body = await flows.expect(response, 422)
    assert body["error"]["fields"][0]["loc"] == ["reason"]
