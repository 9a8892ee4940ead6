"""Closed jobs leave Redis after `job_retention_s`, once their record is in the audit
export; open jobs never do. The reports read the same before and after, the
dedupe window keeps its own time, and an operator still reads a retired job."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from aiohttp.test_utils import TestClient
from redis.asyncio import Redis

from badgeline.coordinator.app import create_app
from badgeline.coordinator.config import CoordinatorSettings
from badgeline.coordinator.control.audit_export import AuditExport
from badgeline.coordinator.control.retention import RetentionSweeper
from badgeline.coordinator.store import Store
from badgeline.coordinator.store.keys import VenueKeys
from tests.conftest import OTHER_KIOSK_TOKEN, auth
from tests.coordinator import flows
from tests.helpers import findings, job_body, wait_for

Client = TestClient[Any, Any]
# The app's own sweep runs once at its start and then waits this long: each test
# sweeps by itself, when it is ready.
NO_SWEEP_S = 3600.0


@dataclass
class Venue:
    client: Client
    settings: CoordinatorSettings
    store: Store
    export: AuditExport
    sweeper: RetentionSweeper
    redis: Redis

    @property
    def keys(self) -> VenueKeys:
        return self.store.keys

    async def sweep_until_gone(self, *job_ids: str, timeout_s: float = 20) -> None:
        """Sweep until each of `job_ids` has left Redis (they are due within seconds)."""

        async def gone() -> bool:
            await self.sweeper.sweep_once()
            return not any([await self.in_redis(job_id) for job_id in job_ids])

        await wait_for(gone, timeout_s, interval_s=0.1)

    async def in_redis(self, job_id: str) -> bool:
        return bool(await self.redis.exists(self.keys.job(job_id)))

    async def leftovers(self, job_id: str, attendee_id: str) -> list[str]:
        """Every trace of the job in Redis besides its idempotency claim."""
        k = self.keys
        found = [str(key) for key in await self.redis.keys(k.job(job_id) + "*")]
        for name, index in (("closed", k.closed), ("dlq", k.dead_letters),
                            ("inflight_checks", k.inflight_checks)):  # fmt: skip
            if await self.redis.zscore(index, job_id) is not None:
                found.append(name)
        for name, members in (("attendee", k.attendee(attendee_id)), ("twice", k.printed_twice),
                              ("flagged", k.possible_duplicates)):  # fmt: skip
            if await self.redis.sismember(members, job_id):
                found.append(name)
        return found

    def exported(self) -> dict[str, list[dict[str, Any]]]:
        records: dict[str, list[dict[str, Any]]] = {}
        for record in self.export.records():
            records.setdefault(record["job_id"], []).append(record)
        return records


@pytest.fixture
async def make_venue(
    redis: Redis, settings: CoordinatorSettings, aiohttp_client: Any
) -> AsyncIterator[Any]:
    async def make(**overrides: Any) -> Venue:
        tuned = CoordinatorSettings.model_validate({
            **settings.model_dump(), "job_retention_s": 1,
            "retention_sweep_interval_s": NO_SWEEP_S, **overrides,
        })  # fmt: skip
        client: Client = await aiohttp_client(create_app(tuned, redis))
        store = Store(redis, tuned)
        export = AuditExport(tuned.audit_directory, tuned.audit_file_max_bytes)
        return Venue(client, tuned, store, export, RetentionSweeper(store, export), redis)

    yield make


async def _printed(client: Client, printer_id: str = "printer-a", **body: Any) -> str:
    job = await flows.submit(client, **{**job_body(printer_id), **body})
    leased = await flows.lease_one(client, printer_id)
    assert leased["job_id"] == job["job_id"]
    await flows.start(client, job["job_id"], leased["lease_id"], printer_id)
    await flows.ack(client, job["job_id"], leased["lease_id"], printer_id=printer_id)
    return str(job["job_id"])


async def test_only_closed_jobs_leave_and_every_trace_of_them_goes(make_venue: Any) -> None:
    venue: Venue = await make_venue(max_attempts=1, high_water_mark=2,
                                    spill_named_targets=False)  # fmt: skip
    client = venue.client
    await flows.heartbeat(client, "printer-a")
    await flows.heartbeat(client, "printer-b")
    # GIVEN a printed, a canceled, a failed and a shed job (each closed)…
    closed_bodies = {name: job_body("printer-a") for name in ("printed", "canceled", "failed")}
    closed = {"printed": await _printed(client, **closed_bodies["printed"])}
    closed["canceled"] = (await flows.submit(client, **closed_bodies["canceled"]))["job_id"]
    await flows.cancel(client, closed["canceled"])
    closed["failed"] = (await flows.submit(client, **closed_bodies["failed"]))["job_id"]
    failing = await flows.lease_one(client)
    await flows.start(client, closed["failed"], failing["lease_id"])
    await flows.ack(client, closed["failed"], failing["lease_id"], result="failed", error="jam")
    queued = [(await flows.submit(client, printer_target="printer-b"))["job_id"] for _ in range(2)]
    shed_body = job_body("printer-b")
    response = await client.post("/v1/jobs", json=shed_body, headers=flows.KIOSK)
    closed["dead_lettered"] = (await flows.expect(response, 503))["job_id"]
    closed_bodies["dead_lettered"] = shed_body
    # …AND a queued, a leased and a printing one (open)
    leased_id = (await flows.submit(client))["job_id"]
    assert (await flows.lease_one(client))["job_id"] == leased_id
    printing_id = (await flows.submit(client))["job_id"]
    printing = await flows.lease_one(client)
    await flows.start(client, printing_id, printing["lease_id"])
    open_ids = {*queued, leased_id, printing_id}

    # WHEN their retention has passed and the sweep has run
    await venue.sweep_until_gone(*closed.values())

    # THEN each closed job is gone from Redis with every index and key it had
    for name, job_id in closed.items():
        attendee = closed_bodies[name]["attendee_id"]
        assert await venue.leftovers(job_id, attendee) == [], name
    # AND is in the export once, as it ended
    exported = venue.exported()
    assert {job_id: len(exported[job_id]) for job_id in closed.values()} == dict.fromkeys(
        closed.values(), 1
    )
    for name, job_id in closed.items():
        assert exported[job_id][0]["job"]["state"] == name
    # AND the open jobs are all still there, as they were, whatever the sweeps
    await venue.sweeper.sweep_once()
    states = {job_id: (await flows.get_job(client, job_id))["state"] for job_id in open_ids}
    assert states == {**dict.fromkeys(queued, "queued"), leased_id: "leased",
                      printing_id: "printing"}  # fmt: skip
    assert not open_ids & set(venue.exported())


async def test_a_closed_job_stays_until_its_retention_has_passed(make_venue: Any) -> None:
    # GIVEN a venue keeping closed jobs an hour, and a job just printed
    venue: Venue = await make_venue(job_retention_s=3600)
    await flows.heartbeat(venue.client)
    job_id = await _printed(venue.client)
    # WHEN the sweep runs
    retired = await venue.sweeper.sweep_once()
    # THEN nothing leaves and nothing is exported
    assert retired == 0 and await venue.in_redis(job_id) and venue.exported() == {}


async def _reports(client: Client) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    reconcile = await flows.expect(
        await client.get("/v1/reconcile?deadline_s=0", headers=flows.OPERATOR), 200
    )
    stats = {by: await flows.expect(await client.get(f"/v1/stats?by={by}",
                                                     headers=flows.OPERATOR), 200)
             for by in ("printer", "hour", "source")}  # fmt: skip
    metrics = await client.get("/metrics", headers=flows.OPERATOR)
    lines = [line for line in (await metrics.text()).splitlines()
             if line.startswith("badgeline_jobs{")]  # fmt: skip
    return reconcile, stats, {"jobs_by_state": sorted(lines)}


async def test_statistics_and_reconciliation_read_the_same_after_a_sweep(make_venue: Any) -> None:
    venue: Venue = await make_venue(max_attempts=1, high_water_mark=1, spill_named_targets=False)
    client = venue.client
    await flows.heartbeat(client, "printer-a")
    # GIVEN a venue that printed, canceled, failed and shed jobs, and still has one open
    finished = [await _printed(client) for _ in range(3)]
    finished.append((await flows.submit(client))["job_id"])
    await flows.cancel(client, finished[-1])
    finished.append((await flows.submit(client))["job_id"])
    failing = await flows.lease_one(client)
    await flows.start(client, finished[-1], failing["lease_id"])
    await flows.ack(client, finished[-1], failing["lease_id"], result="failed", error="jam")
    await flows.submit(client, printer_target="printer-b")
    response = await client.post("/v1/jobs", json=job_body("printer-b"), headers=flows.KIOSK)
    finished.append((await flows.expect(response, 503))["job_id"])
    reconcile, stats, metrics = await _reports(client)
    assert reconcile["counts"]["unaccounted"] == 0 and findings(reconcile, "not_terminal") != []
    # WHEN the finished jobs leave Redis
    await venue.sweep_until_gone(*finished)
    # THEN every statistic reads as before
    after, after_stats, after_metrics = await _reports(client)
    assert after_stats == stats
    # AND so do reconciliation's counts: a failed job that left is still failed,
    # nothing is unaccounted; only the shed job is no longer open, having left the
    # dead letters (it was never accepted)
    assert after["counts"].pop("retired") == {"jobs": 6, "failed": 1, "printed_more_than_once": 0,
                                              "possible_duplicates": 0}  # fmt: skip
    reconcile["counts"].pop("retired")
    assert reconcile["counts"]["open_by_state"].pop("dead_lettered") == 1
    reconcile["counts"]["open"] -= 1
    assert after["counts"] == reconcile["counts"]
    # AND the job gauges, but for that dead letter and the failed job: gone, neither
    # waits for a redrive any more (the counters keep what they were)
    waiting = ('badgeline_jobs{state="dead_lettered"} 1.0', 'badgeline_jobs{state="failed"} 1.0')
    assert set(waiting) <= set(metrics["jobs_by_state"])
    names = tuple(gauge.removesuffix(" 1.0") for gauge in waiting)
    assert [line.replace(" 0.0", " 1.0") if line.startswith(names) else line
            for line in after_metrics["jobs_by_state"]] == metrics["jobs_by_state"]  # fmt: skip
    shed = finished[-1]
    assert [j["job_id"] for j in findings(after, "not_terminal")] == [
        j["job_id"] for j in findings(reconcile, "not_terminal") if j["job_id"] != shed
    ]


async def test_a_job_printed_twice_stays_a_finding_after_it_has_left(make_venue: Any) -> None:
    venue: Venue = await make_venue()
    client = venue.client
    await flows.heartbeat(client)
    # GIVEN a job whose agent could not tell whether it printed: sent again, both came out
    job_id = (await flows.submit(client))["job_id"]
    first = await flows.lease_one(client)
    await flows.start(client, job_id, first["lease_id"])
    await flows.ack(client, job_id, first["lease_id"], result="uncertain", error="power cut")
    second = await flows.lease_one(client)
    await flows.start(client, job_id, second["lease_id"])
    await flows.ack(client, job_id, second["lease_id"])
    await flows.ack(client, job_id, first["lease_id"])
    # WHEN it leaves Redis
    await venue.sweep_until_gone(job_id)
    # THEN reconciliation still counts it printed twice and flagged, so a check fails
    report = await flows.expect(await client.get("/v1/reconcile", headers=flows.OPERATOR), 200)
    assert findings(report, "printed_more_than_once") == [] and report["counts"]["unaccounted"] == 0
    retired = report["counts"]["retired"]
    assert (retired["printed_more_than_once"], retired["possible_duplicates"]) == (1, 1)
    # AND its record in the export says so, with both leases
    (record,) = venue.exported()[job_id]
    assert record["printed_more_than_once"] and sorted(record["prints"]) == sorted(
        [first["lease_id"], second["lease_id"]]
    )


async def test_the_dedupe_window_outlives_a_job_that_left_before_it(
    make_venue: Any, redis: Redis
) -> None:
    # GIVEN a job printed, in a venue whose retention is shorter than the dedupe window
    venue: Venue = await make_venue(dedupe_window_s=600)
    await flows.heartbeat(venue.client)
    body = job_body()
    job_id = await _printed(venue.client, **body)
    # WHEN it leaves Redis
    await venue.sweep_until_gone(job_id)
    # THEN its idempotency claim is still there with its own expiry
    claim = venue.keys.idempotency(body["idempotency_key"])
    assert 0 < await redis.pttl(claim) <= 600_000
    # AND the kiosk's retry of the key is answered with that job, as it ended
    again = await flows.submit(venue.client, status=200, **body)
    assert (again["job_id"], again["state"], again["duplicate"]) == (job_id, "printed", True)
    # AND the key with another payload is still refused
    other = {**body, "badge_pdf_ref": "https://badges.example/other.pdf"}
    await flows.submit(venue.client, status=409, **other)
    # AND another kiosk still cannot learn of the job through its key
    response = await venue.client.post("/v1/jobs", json=body, headers=auth(OTHER_KIOSK_TOKEN))
    refused = await flows.expect(response, 409)
    assert job_id not in str(refused)


async def test_an_operator_reads_a_job_that_has_left_and_a_kiosk_does_not(
    make_venue: Any,
) -> None:
    venue: Venue = await make_venue()
    await flows.heartbeat(venue.client)
    job_id = await _printed(venue.client)
    before = await flows.get_job(venue.client, job_id)
    # GIVEN a printed job that has left Redis
    await venue.sweep_until_gone(job_id)
    # WHEN an operator asks for it
    response = await venue.client.get(f"/v1/jobs/{job_id}", headers=flows.OPERATOR)
    found = await flows.expect(response, 200)
    # THEN it reads as it did, its history ending with where it was read from
    note = found["history"].pop()
    assert found == before
    assert (note["from"], note["to"], note["actor"]) == ("printed", "printed",
                                                         "coordinator:retention")  # fmt: skip
    assert "audit export" in note["reason"]
    # AND to a kiosk, even the one that submitted it, it is an unknown job
    await flows.expect(await venue.client.get(f"/v1/jobs/{job_id}", headers=flows.KIOSK), 404)
    # AND a job that never existed is still unknown to the operator
    response = await venue.client.get("/v1/jobs/job_0000000000000000", headers=flows.OPERATOR)
    await flows.expect(response, 404)


async def _due(venue: Venue, job_id: str) -> bool:
    closed_ms = await venue.redis.zscore(venue.keys.closed, job_id)
    seconds, micros = await venue.redis.time()
    now_ms = seconds * 1000 + micros // 1000
    return closed_ms is not None and now_ms - closed_ms > venue.settings.job_retention_s * 1000


async def test_a_job_a_pending_redrive_needs_waits_for_that_dead_letter(
    make_venue: Any, redis: Redis
) -> None:
    # (heartbeats 60 s apart: the printer is not declared dead while the test waits)
    venue: Venue = await make_venue(job_retention_s=5, high_water_mark=1,
                                    spill_named_targets=False, heartbeat_interval_s=60)  # fmt: skip
    client = venue.client
    await flows.heartbeat(client)
    # GIVEN a printed job whose key's dedupe window has run out (shortened here)
    body = job_body()
    printed = await _printed(client, **body)
    await redis.delete(venue.keys.idempotency(body["idempotency_key"]))
    await wait_for(lambda: _due(venue, printed), 15, interval_s=0.1)
    # AND the same badge submitted again, and shed (its printer's queue is full)
    await flows.submit(client)
    response = await client.post("/v1/jobs", json=body, headers=flows.KIOSK)
    shed = (await flows.expect(response, 503))["job_id"]
    # WHEN the sweep runs while the printed job is due and the dead letter is not
    await venue.sweeper.sweep_once()
    # THEN the printed job stays: the redrive of the dead letter still finds it
    assert await venue.in_redis(printed)
    outcome = await flows.redrive(client, shed)
    assert outcome[shed]["outcome"] == "suppressed" and outcome[shed]["detail"] == printed
    # AND once the dead letter is closed for good, both leave in time
    await venue.sweep_until_gone(printed, shed, timeout_s=30)
    assert {printed, shed} <= set(venue.exported())


async def test_the_upgrade_indexes_the_closed_jobs_an_older_release_left(
    make_venue: Any, redis: Redis
) -> None:
    venue: Venue = await make_venue()
    await flows.heartbeat(venue.client)
    printed = await _printed(venue.client)
    waiting = (await flows.submit(venue.client))["job_id"]
    # GIVEN a venue as the previous data format leaves it: closed jobs in no index
    await redis.delete(venue.keys.closed)
    await redis.set(venue.keys.data_format, 2)
    # WHEN a coordinator of this release starts on it
    report = await venue.store.data_format.upgrade()
    # THEN the closed job is indexed (the open one is not), and it leaves in time
    assert report.found == 2 and report.jobs_upgraded == 1
    assert await redis.zscore(venue.keys.closed, waiting) is None
    await venue.sweep_until_gone(printed)
    assert await venue.in_redis(waiting)
