"""A venue that the previous release left mid-event (data format 1, recorded by
record_venue.py) is upgraded by the coordinator's start and finishes: every job
reads as it did, every open badge prints once, nothing is lost or printed twice."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp.test_utils import TestClient
from redis.asyncio import Redis

from badgeline.coordinator.app import create_app
from badgeline.coordinator.config import CoordinatorSettings
from badgeline.coordinator.control.health import probe_verdict
from badgeline.coordinator.store import Store
from badgeline.coordinator.store.keys import VenueKeys
from badgeline.coordinator.store.upgrade import DATA_FORMAT, DataFormatTooNew
from badgeline.protocol.agent_models import HeartbeatRequest, PrinterHealthReport
from tests.coordinator import flows
from tests.coordinator.sse import stored_events
from tests.coordinator.upgrade.recorded import RECORDED, restore_recorded_venue
from tests.helpers import findings, wait_for

FORMAT_1_FIELDS = {"attendee_id", "badge_pdf_ref", "printer_target", "priority"}
# What an agent of the previous release reads from a leased job.
LEASED_JOB_FIELDS = {
    "attendee_id", "badge_pdf_ref", "printer_target", "priority", "idempotency_key",
    "attempts", "possible_duplicate", "correlation_id",
}  # fmt: skip
PRINTERS = ("printer-a", "printer-b", "printer-c")


@pytest.fixture
def venue_settings(settings: CoordinatorSettings) -> CoordinatorSettings:
    # Heartbeats sent by hand: none of the recorded printers is declared dead meanwhile.
    return CoordinatorSettings.model_validate({**settings.model_dump(), "heartbeat_interval_s": 60,
                                               "high_water_mark": 50})  # fmt: skip


async def _job_hashes(redis: Redis, venue: str) -> dict[str, dict[bytes, bytes]]:
    keys = VenueKeys(venue)
    return {job_id: await redis.hgetall(keys.job(job_id)) for job_id in RECORDED["jobs"]}


async def test_the_start_upgrades_every_job_and_each_reads_as_it_did(
    redis: Redis, venue_settings: CoordinatorSettings
) -> None:
    # GIVEN a venue as the previous release wrote it, mid-event
    await restore_recorded_venue(redis, venue_settings.venue)
    store = Store(redis, venue_settings)
    assert await store.data_format.current() == 1
    # WHEN the new coordinator's start upgrades it
    report = await store.data_format.upgrade()
    # THEN every job hash holds its payload as one field, and the old fields are gone
    assert report.found == 1 and report.jobs_upgraded == len(RECORDED["jobs"])
    for job_id, fields in (await _job_hashes(redis, venue_settings.venue)).items():
        names = {name.decode() for name in fields}
        assert "payload" in names and not names & FORMAT_1_FIELDS, (job_id, names)
    assert await store.data_format.current() == DATA_FORMAT
    # AND every job reads exactly as the previous release showed it (recorded before
    # deadlines existed: none has one)
    for job_id, recorded in RECORDED["views"].items():
        view = await store.jobs.get(job_id)
        assert view is not None
        no_deadline = {"expire_after_s": None, "expires_at": None}
        assert view.model_dump(mode="json", by_alias=True) == recorded | no_deadline
    # AND a second start (another replica, or a restart) changes nothing
    assert (await store.data_format.upgrade()).jobs_upgraded == 0


async def _heartbeat_all(store: Store) -> None:
    for printer_id in PRINTERS:
        report = PrinterHealthReport(reachable=True)
        beat = HeartbeatRequest(agent_id=f"pi-{printer_id}", version="t", health=report)
        await store.printers.heartbeat(printer_id, beat, probe_verdict(report))


class CountingAgents:
    """The printers' agents, over the real API: each grant it gets is one badge out."""

    def __init__(self, client: TestClient[Any, Any]) -> None:
        self.client = client
        self.badges: dict[str, int] = {}  # job_id -> badges printed

    async def print_one(self, job_id: str, lease_id: str, printer_id: str) -> None:
        await flows.start(self.client, job_id, lease_id, printer_id)
        self.badges[job_id] = self.badges.get(job_id, 0) + 1
        await flows.ack(self.client, job_id, lease_id, printer_id=printer_id)

    async def drain(self) -> bool:
        """Lease and print whatever each printer has; True once a round found nothing."""
        found = False
        for printer_id in PRINTERS:
            for leased in await flows.lease(self.client, printer_id, max_jobs=50):
                assert set(leased["job"]) == LEASED_JOB_FIELDS, leased["job"]
                await self.print_one(leased["job_id"], leased["lease_id"], printer_id)
                found = True
        return not found


async def test_a_venue_upgraded_mid_event_prints_every_open_badge_once(
    redis: Redis, venue_settings: CoordinatorSettings, aiohttp_client: Any
) -> None:
    # GIVEN the recorded venue, its printers heartbeating, and the new coordinator started on it
    await restore_recorded_venue(redis, venue_settings.venue)
    store = Store(redis, venue_settings)
    await _heartbeat_all(store)
    client: TestClient[Any, Any] = await aiohttp_client(create_app(venue_settings, redis))
    assert await store.data_format.current() == DATA_FORMAT
    agents = CountingAgents(client)
    jobs = RECORDED["jobs"]
    # WHEN the agents carry on: the badge that was printing is confirmed with its own
    # lease and fence, the leased one is started on its lease (or leased again if
    # that lease ran out meanwhile), the dead letter is redriven, and they drain
    printing = next(j for j, job in jobs.items() if job["state"] == "printing")
    await flows.ack(client, printing, jobs[printing]["lease_id"], printer_id="printer-a")
    agents.badges[printing] = 1  # it was out before the upgrade
    leased = next(j for j, job in jobs.items() if job["state"] == "leased")
    if (await flows.get_job(client, leased))["state"] == "leased":
        await agents.print_one(leased, jobs[leased]["lease_id"], "printer-b")
    shed = [j for j, job in jobs.items() if job["state"] == "dead_lettered"]
    assert all(r["outcome"] == "queued" for r in (await flows.redrive(client, *shed)).values())
    await wait_for(agents.drain, timeout_s=120, interval_s=0.2)  # a retry backs off first
    # THEN every job that was open printed exactly once, and the closed ones stayed closed
    for job_id, job in jobs.items():
        now = await flows.get_job(client, job_id)
        if job["state"] in ("printed", "canceled", "failed"):  # closed before the upgrade
            assert (now["state"], now["prints"]) == (job["state"], int(job["state"] == "printed"))
            assert job_id not in agents.badges, job_id
        else:
            assert (now["state"], now["prints"]) == ("printed", 1), (job_id, job, now)
            assert agents.badges[job_id] == 1, (job_id, job)
    # AND the venue's own count agrees: nothing unaccounted, nothing printed twice,
    # and nothing expired (the old release's jobs carry no deadline: they needed no upgrade)
    report = await flows.expect(await client.get("/v1/reconcile", headers=flows.OPERATOR), 200)
    assert report["counts"]["unaccounted"] == 0 and findings(report, "printed_more_than_once") == []
    assert report["counts"]["expired"] == 0
    # AND every change made since the upgrade is in the job events, as for a new job
    printed_events = {fields["job_id"] for _, fields in
                      await stored_events(redis, venue_settings.venue)
                      if fields["state"] == "printed"}  # fmt: skip
    assert printed_events == set(agents.badges)


async def test_a_venue_written_by_a_newer_release_is_not_touched(
    redis: Redis, venue_settings: CoordinatorSettings
) -> None:
    # GIVEN a venue marked with a data format this release does not know
    await restore_recorded_venue(redis, venue_settings.venue)
    await redis.set(VenueKeys(venue_settings.venue).data_format, DATA_FORMAT + 1)
    before = await _job_hashes(redis, venue_settings.venue)
    # WHEN this release starts on it THEN it refuses, saying why, and writes nothing
    with pytest.raises(DataFormatTooNew, match=f"data format {DATA_FORMAT + 1}.*newer"):
        await Store(redis, venue_settings).data_format.upgrade()
    assert await _job_hashes(redis, venue_settings.venue) == before
