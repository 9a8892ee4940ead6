"""Everything leaves a trail (invariant 8): every state change appends a history
entry (at, from, to, actor, reason) and one JSON log line on `badgeline.events`
carrying correlation_id, job_id, idempotency_key and printer_id."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from badgeline.log import EVENT_LOGGER, JsonLineFormatter
from tests.coordinator import flows
from tests.coordinator.conftest import MakeClient
from tests.helpers import job_body, wait_for

Client = TestClient[Any, Any]
TRACE = ("correlation_id", "job_id", "idempotency_key", "printer_id")


@pytest.fixture
def events(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.INFO, logger=EVENT_LOGGER)
    return caplog


def _job_events(caplog: pytest.LogCaptureFixture, job_id: str) -> list[dict[str, Any]]:
    found = []
    for record in caplog.records:
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict) and fields.get("job_id") == job_id:
            found.append(fields)
    return found


def _assert_traced(event: dict[str, Any], job: dict[str, Any], correlation_id: str) -> None:
    assert {name: event.get(name) for name in TRACE} == {
        "correlation_id": correlation_id, "job_id": job["job_id"],
        "idempotency_key": job["idempotency_key"], "printer_id": job["printer_id"],
    }, event  # fmt: skip


def _assert_history(job: dict[str, Any], steps: list[tuple[str | None, str]]) -> None:
    history = job["history"]
    assert [(e["from"], e["to"]) for e in history] == steps
    assert all(e["actor"] and e["reason"] for e in history), history
    times = [e["at"] for e in history]
    assert times == sorted(times)


async def test_a_printed_job_leaves_a_full_trail(
    client: Client, events: pytest.LogCaptureFixture
) -> None:
    # GIVEN a job submitted with a correlation id
    response = await client.post(
        "/v1/jobs", json=job_body(), headers={**flows.KIOSK, "X-Correlation-ID": "kiosk-7:scan-42"}
    )
    created = await flows.expect(response, 201)
    assert created["correlation_id"] == "kiosk-7:scan-42"
    # WHEN it is leased, started and printed
    leased = await flows.lease_one(client)
    await flows.start(client, created["job_id"], leased["lease_id"])
    await flows.ack(client, created["job_id"], leased["lease_id"])
    # THEN its history has every step with who and why
    job = await flows.get_job(client, created["job_id"])
    _assert_history(job, [(None, "queued"), ("queued", "leased"), ("leased", "printing"),
                          ("printing", "printed")])  # fmt: skip
    actors = [e["actor"] for e in job["history"]]
    assert actors == ["kiosk:kiosk-1"] + ["agent:agent-printer-a"] * 3
    # AND one log line per change, each carrying the job's trace
    logged = _job_events(events, created["job_id"])
    assert [e["event"] for e in logged] == [
        "job_enqueued",
        "job_leased",
        "start_granted",
        "job_ack_printed",
    ]
    for event in logged:
        _assert_traced(event, job, "kiosk-7:scan-42")
    # AND the lines are JSON as the formatter writes them
    record = next(r for r in events.records if getattr(r, "fields", None) == logged[0])
    assert json.loads(JsonLineFormatter().format(record))["event"] == "job_enqueued"


async def test_failed_uncertain_and_canceled_jobs_leave_a_trail(
    make_client: MakeClient, events: pytest.LogCaptureFixture
) -> None:
    client = await make_client(retry_backoff_unit_s=0.01, retry_backoff_cap_s=0.05)
    created = await flows.submit(client)
    job_id, cid = created["job_id"], created["correlation_id"]
    leased = await flows.lease_one(client)
    await flows.start(client, job_id, leased["lease_id"])
    # WHEN it fails once, is uncertain once, and is then canceled while queued
    await flows.ack(client, job_id, leased["lease_id"], result="failed", error="jam")
    await wait_for(lambda: _in_queue(client, job_id), timeout_s=10)
    again = await flows.lease_one(client)
    await flows.start(client, job_id, again["lease_id"])
    await flows.ack(client, job_id, again["lease_id"], result="uncertain", error="power")
    await flows.cancel(client, job_id)
    # THEN the history records each change with its reason
    job = await flows.get_job(client, job_id)
    steps = [(e["from"], e["to"]) for e in job["history"]]
    assert steps[:4] == [(None, "queued"), ("queued", "leased"), ("leased", "printing"),
                         ("printing", job["history"][3]["to"])]  # fmt: skip
    assert "jam" in job["history"][3]["reason"] and "power" in job["history"][-2]["reason"]
    assert steps[-1] == ("queued", "canceled") and job["history"][-1]["actor"] == "kiosk:kiosk-1"
    # AND the agent-reported changes and the cancel were logged with the job's trace
    logged = {e["event"]: e for e in _job_events(events, job_id)}
    for name in ("job_ack_failed", "job_ack_uncertain", "job_canceled"):
        _assert_traced(logged[name], job, cid)
    assert logged["job_canceled"]["request_correlation_id"] != cid


async def _in_queue(client: Client, job_id: str) -> bool:
    return job_id in await flows.queue_ids(client)


async def test_an_expired_lease_is_logged_per_job(
    make_client: MakeClient, events: pytest.LogCaptureFixture
) -> None:
    client = await make_client(lease_ttl_s=1.0, lease_scan_interval_s=0.1)
    created = await flows.submit(client)
    leased = await flows.lease_one(client)
    # WHEN the lease runs out before a start
    await wait_for(lambda: _in_queue(client, created["job_id"]), timeout_s=10)
    # THEN the return to the queue has a history entry by the scanner and a traced log line
    job = await flows.get_job(client, created["job_id"])
    assert job["history"][-1]["from"] == "leased" and job["history"][-1]["to"] == "queued"
    assert leased["lease_id"] in job["history"][-1]["reason"]
    expired = [e for e in _job_events(events, job["job_id"]) if e["event"] == "lease_expired"]
    assert len(expired) == 1 and expired[0]["lease_id"] == leased["lease_id"]
    _assert_traced(expired[0], job, created["correlation_id"])


async def test_shedding_and_redrive_are_logged_per_job(
    make_client: MakeClient, events: pytest.LogCaptureFixture
) -> None:
    client = await make_client(high_water_mark=1)
    await flows.submit(client)
    body = job_body()
    response = await client.post("/v1/jobs", json=body, headers=flows.KIOSK)
    shed = await flows.expect(response, 503)
    await flows.lease(client)
    # WHEN the operator redrives the shed job
    await flows.redrive(client, shed["job_id"])
    # THEN both the shedding and the redrive are in the history and the log, traced
    job = await flows.get_job(client, shed["job_id"])
    _assert_history(job, [(None, "dead_lettered"), ("dead_lettered", "queued")])
    assert job["history"][-1]["actor"] == "operator:ops"
    logged = _job_events(events, shed["job_id"])
    assert [e["event"] for e in logged] == ["queue_backpressure", "dead_letter_redriven"]
    for event in logged:
        _assert_traced(event, job, shed["correlation_id"])
    assert logged[1]["outcome"] == "queued"


async def test_a_duplicate_is_logged_with_the_original_job(
    client: Client, events: pytest.LogCaptureFixture
) -> None:
    body = job_body()
    created = await flows.expect(await client.post("/v1/jobs", json=body, headers=flows.KIOSK),
                                 201)  # fmt: skip
    await client.post("/v1/jobs", json=body, headers=flows.KIOSK)
    logged = [e["event"] for e in _job_events(events, created["job_id"])]
    assert logged == ["job_enqueued", "duplicate_suppressed"]
    job = await flows.get_job(client, created["job_id"])
    assert len(job["history"]) == 1


async def test_an_unusable_correlation_id_is_replaced_and_still_traced(
    client: Client, events: pytest.LogCaptureFixture
) -> None:
    headers = {**flows.KIOSK, "X-Correlation-ID": "not a usable id; " + "x" * 200}
    response = await client.post("/v1/jobs", json=job_body(), headers=headers)
    created = await flows.expect(response, 201)
    generated = response.headers["X-Correlation-ID"]
    assert generated == created["correlation_id"] and " " not in generated
    job = await flows.get_job(client, created["job_id"])
    [enqueued] = _job_events(events, created["job_id"])
    _assert_traced(enqueued, job, generated)
