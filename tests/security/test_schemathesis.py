"""Schemathesis against a live coordinator process (a short run; the bench runs
≥ 10,000 cases): no 5xx, every error in the documented shape, every documented
2xx body valid against its schema, and nothing unhandled in the coordinator's log.
Single calls first, then call sequences that follow the document's links."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from badgeline.coordinator.store.embedded import EmbeddedRedis
from tests.conftest import KIOSK_TOKEN, agent_token
from tests.helpers import job_body
from tests.security.conftest import LiveCoordinator, running_coordinator
from tests.security.fuzz import FuzzTarget, fuzz
from tests.security.fuzz_stateful import fuzz_stateful

# Lease long-polls answer at once: a fuzzed `wait` must not stall the run. The
# printers' agents are the fuzzer, which sends heartbeats now and then: a printer
# is not declared dead for the silence in between (its queue would be failed over
# and sequences would lease nothing), and one healthy beat revives it. Every case
# comes from one address: enrolment and sign-in get attempts enough for all of
# them to reach the handlers (their 429 is tests/security/test_credential_limits.py's).
FUZZ_SETTINGS: dict[str, Any] = {
    "lease_max_wait_s": 0, "heartbeat_interval_s": 60, "fail_threshold": 100,
    "recover_after_healthy": 1, "credential_attempts_burst": 100_000,
}  # fmt: skip
EXAMPLES_PER_OPERATION = 4  # x 35 operations, positive and (27 of them) negative: ~250 cases
STATEFUL_CASES = 150  # calls in sequences of up to 10, runs of 15 sequences


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


@pytest.fixture(scope="module")
def live(
    tmp_path_factory: pytest.TempPathFactory, redis_server: EmbeddedRedis
) -> Iterator[LiveCoordinator]:
    """One coordinator process for both runs (starting one takes seconds on a busy machine)."""
    directory = tmp_path_factory.mktemp("fuzz")
    with running_coordinator(directory, redis_server.url, "fuzzshort", **FUZZ_SETTINGS) as live:
        yield live


def assert_nothing_unhandled(live: LiveCoordinator) -> None:
    log = live.log()
    assert "unhandled error" not in log and "Traceback" not in log, log[-3000:]


def test_schemathesis_finds_no_server_error_and_no_off_contract_answer(
    live: LiveCoordinator,
) -> None:
    # GIVEN a coordinator process with a queued and a leased job
    jobs = seed_jobs(live.url)
    # WHEN schemathesis drives every documented operation, positive and negative
    report = fuzz(FuzzTarget(live.url, jobs, EXAMPLES_PER_OPERATION, seed=7))
    # THEN every answer kept the contract (fuzz raises on the first that does not)
    assert report.failures == []
    assert report.cases >= 200, report.summary()
    assert len(report.by_operation) >= 13, report.summary()
    # AND the coordinator logged nothing it did not handle
    assert_nothing_unhandled(live)


def test_call_sequences_along_the_links_reach_granted_leases_and_keep_the_contract(
    live: LiveCoordinator,
) -> None:
    # WHEN schemathesis chains calls along the document's links (submit -> read,
    # cancel, reprint, list; lease -> start -> ack under the lease; code -> enrol)
    report = fuzz_stateful(FuzzTarget(live.url, [], 0, seed=7), STATEFUL_CASES,
                           scenarios_per_run=15)  # fmt: skip
    # THEN every answer kept the contract, and no job just made answered 404
    assert report.failures == []
    assert report.cases >= STATEFUL_CASES, report.summary()
    # AND sequences reached what single calls with made-up ids cannot: a job read or
    # canceled by the id its submission returned, a start or an ack under a live lease
    assert any(link.endswith("-> GET /v1/jobs/{job_id}") or "CancelJob" in link
               for link in report.by_link), report.summary()  # fmt: skip
    agent = "POST /v1/agents/{printer_id}/jobs/{job_id}"
    under_lease = report.by_answer[f"{agent}/start 200"] + report.by_answer[f"{agent}/ack 200"]
    assert under_lease >= 1, dict(report.by_answer)
    assert_nothing_unhandled(live)
