"""A job naming a printer nobody knows is refused: 422 `unknown_printer`, nothing
written. Known means an agent has reported it (a heartbeat), or the config names it
(`known_printers`, a pool); `accept_unknown_printers` lifts the rule. Without it a
typo (`printer-0l` for `printer-01`) was accepted and waited for ever."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp.test_utils import TestClient
from pydantic import ValidationError
from redis.asyncio import Redis

from badgeline.coordinator.config import CoordinatorSettings
from tests.coordinator import flows
from tests.coordinator.conftest import MakeClient
from tests.helpers import job_body

Client = TestClient[Any, Any]


async def _bare(make_client: MakeClient, **overrides: Any) -> Client:
    """A coordinator whose config names no printer (the tests' own pre-registers some)."""
    return await make_client(**{"known_printers": [], **overrides})


async def test_a_typo_printer_is_refused_and_nothing_is_written(
    make_client: MakeClient, redis: Redis, settings: CoordinatorSettings
) -> None:
    # GIVEN a venue whose printer-a heartbeats, and nothing in the config
    client = await _bare(make_client)
    await flows.heartbeat(client, "printer-a")
    before = await flows.venue_snapshot(redis, settings.venue)
    # WHEN a kiosk submits for printer-al (a typo)
    refused = await flows.submit(client, status=422, **job_body("printer-al"))
    # THEN it is refused, naming the field and the printer, and nothing was kept
    flows.assert_error_shape(refused, "unknown_printer")
    assert refused["error"]["fields"] == [
        {"loc": ["printer_target"], "msg": "unknown printer printer-al"}
    ]
    assert refused["printer_id"] == "printer-al" and "printer-al" in refused["error"]["message"]
    assert await flows.venue_snapshot(redis, settings.venue) == before
    # AND the printer that reported takes the same badge
    accepted = await flows.submit(client, **job_body("printer-a"))
    assert accepted["printer_id"] == "printer-a"


async def test_a_refused_key_is_free_for_the_corrected_job(make_client: MakeClient) -> None:
    # GIVEN a job refused for its unknown printer
    client = await _bare(make_client)
    await flows.heartbeat(client, "printer-a")
    body = job_body("printer-x")
    await flows.submit(client, status=422, **body)
    # WHEN the kiosk sends it again, printer corrected, under the same key
    accepted = await flows.submit(client, status=201, **{**body, "printer_target": "printer-a"})
    # THEN it is a new job: the refusal claimed nothing
    assert accepted["duplicate"] is False and accepted["printer_id"] == "printer-a"


async def test_the_config_pre_registers_printers(make_client: MakeClient) -> None:
    # GIVEN printers named by known_printers and by a pool, none of them heard from yet
    client = await _bare(make_client, known_printers=["printer-k"],
                         pools={"hall": ["printer-h1", "printer-h2"]})  # fmt: skip
    # WHEN jobs name them THEN they are queued for their agents
    for printer_id in ("printer-k", "printer-h2"):
        accepted = await flows.submit(client, **job_body(printer_id))
        assert (accepted["state"], accepted["printer_id"]) == ("queued", printer_id)
    # AND a printer named nowhere is still refused
    flows.assert_error_shape(
        await flows.submit(client, status=422, **job_body("printer-z")), "unknown_printer"
    )


async def test_accept_unknown_printers_takes_any_well_shaped_id(make_client: MakeClient) -> None:
    client = await _bare(make_client, accept_unknown_printers=True)
    accepted = await flows.submit(client, **job_body("printer-new"))
    assert (accepted["state"], accepted["printer_id"]) == ("queued", "printer-new")


async def test_an_accepted_key_is_answered_as_a_duplicate_before_the_printer_check(
    make_client: MakeClient,
) -> None:
    # GIVEN a job accepted for a pre-registered printer
    body = job_body("printer-k")
    first = await flows.submit(await _bare(make_client, known_printers=["printer-k"]), **body)
    # WHEN a replica that does not list the printer gets the kiosk's retry
    other = await _bare(make_client)
    again = await flows.submit(other, status=200, **body)
    # THEN the kiosk is told of its job, not refused
    assert again["job_id"] == first["job_id"] and again["duplicate"] is True


async def test_a_reprint_to_an_unknown_printer_is_refused(make_client: MakeClient) -> None:
    # GIVEN a printed job
    client = await _bare(make_client)
    await flows.heartbeat(client, "printer-a")
    job_id = (await flows.submit(client))["job_id"]
    leased = await flows.lease_one(client)
    await flows.start(client, job_id, leased["lease_id"])
    await flows.ack(client, job_id, leased["lease_id"])
    # WHEN an operator reprints it to a printer nobody knows
    body = {"reason": "smudged", "printer_target": "printer-q"}
    response = await client.post(f"/v1/jobs/{job_id}/reprint", json=body, headers=flows.OPERATOR)
    # THEN it is refused the same way
    flows.assert_error_shape(await flows.expect(response, 422), "unknown_printer")


def test_a_known_printer_not_shaped_like_one_stops_start_up() -> None:
    with pytest.raises(ValidationError, match="known_printers"):
        CoordinatorSettings(known_printers=["Printer A"])
