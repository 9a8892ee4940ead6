"""Schemathesis against a live coordinator process (a short run; the bench runs
≥ 10,000 cases): no 5xx, every error in the documented shape, every documented
2xx body valid against its schema, and nothing unhandled in the coordinator's log."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

from badgeline.coordinator.redis_server import EmbeddedRedis
from tests.conftest import KIOSK_TOKEN, agent_token
from tests.helpers import job_body
from tests.security.conftest import running_coordinator
from tests.security.fuzz import FuzzTarget, fuzz

# Lease long-polls answer at once: a fuzzed `wait` must not stall the run.
FUZZ_SETTINGS: dict[str, Any] = {"lease_max_wait_s": 0}
EXAMPLES_PER_OPERATION = 4  # x 35 operations x positive and negative: ~270 cases


def _post(url: str, body: object, token: str) -> dict:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={
        "Authorization": f"Bearer {token}", "Content-Type": "application/json"})  # fmt: skip
    with urllib.request.urlopen(request, timeout=10) as response:
        return dict(json.loads(response.read()))


def seed_jobs(url: str) -> list[str]:
    """A queued job and one leased by printer-a, for cases to name."""
    queued = _post(url + "/v1/jobs", job_body("printer-b"), KIOSK_TOKEN)["job_id"]
    leased = _post(url + "/v1/jobs", job_body("printer-a"), KIOSK_TOKEN)["job_id"]
    _post(url + "/v1/agents/printer-a/lease?wait=0", {}, agent_token("printer-a"))
    return [queued, leased]


def test_schemathesis_finds_no_server_error_and_no_off_contract_answer(
    tmp_path: Path, redis_server: EmbeddedRedis
) -> None:
    # GIVEN a coordinator process with a queued and a leased job
    with running_coordinator(tmp_path, redis_server.url, "fuzzshort", **FUZZ_SETTINGS) as live:
        jobs = seed_jobs(live.url)
        # WHEN schemathesis drives every documented operation, positive and negative
        report = fuzz(FuzzTarget(live.url, jobs, EXAMPLES_PER_OPERATION, seed=7))
    # THEN every answer kept the contract (fuzz raises on the first that does not)
    assert report.failures == []
    assert report.cases >= 200, report.summary()
    assert len(report.by_operation) >= 13, report.summary()
    # AND the coordinator logged nothing it did not handle
    log = live.log()
    assert "unhandled error" not in log and "Traceback" not in log, log[-3000:]
