"""Kiosk isolation: a kiosk token reads, lists and cancels only its own jobs and its
group's; another kiosk's job answers exactly as an unknown one (404), so job ids
cannot be probed. Operators see every job. Over real HTTP against real Redis."""

from __future__ import annotations

import json
from typing import Any

from aiohttp.test_utils import TestClient
from redis.asyncio import Redis

from badgeline.coordinator.api.auth import token_digest
from badgeline.coordinator.config import CoordinatorSettings, TokenEntry
from badgeline.coordinator.store.keys import VenueKeys
from tests.conftest import KIOSK_TOKEN, OTHER_KIOSK_TOKEN, auth
from tests.conftest import test_tokens as configured_tokens
from tests.coordinator import flows
from tests.coordinator.conftest import MakeClient
from tests.helpers import job_body

Client = TestClient[Any, Any]
KIOSK_1, KIOSK_2 = auth(KIOSK_TOKEN), auth(OTHER_KIOSK_TOKEN)
# A third desk, configured per test: in kiosk-1's group, or in none.
DESK_TOKEN = "hall-a-desk-token-for-tests"
DESK = auth(DESK_TOKEN)
UNKNOWN_JOB = "job_00000000deadbeef"


async def _submit(client: Client, headers: dict[str, str], body: dict[str, Any] | None = None,
                  status: int = 201) -> Any:  # fmt: skip
    response = await client.post("/v1/jobs", json=body or job_body(), headers=headers)
    return await flows.expect(response, status)


async def _not_found_like_an_unknown_job(response: Any, job_id: str, unknown: Any) -> None:
    """The answer for a job the caller may not see is the unknown-job answer, id for id."""
    body = await flows.expect(response, 404)
    flows.assert_error_shape(body, "not_found")
    unknown_text = json.dumps(await flows.expect(unknown, 404))
    assert body == json.loads(unknown_text.replace(UNKNOWN_JOB, job_id))


def _tokens_with_desk(group_of_kiosk_1: str | None, group_of_desk: str | None) -> list[Any]:
    tokens = [t.model_dump() for t in configured_tokens()]
    for entry in tokens:
        if entry["name"] == "kiosk-1":
            entry["group"] = group_of_kiosk_1
    desk = TokenEntry(name="hall-a-desk", role="kiosk", sha256=token_digest(DESK_TOKEN),
                      group=group_of_desk)  # fmt: skip
    return [*tokens, desk.model_dump()]


async def test_another_kiosks_job_reads_as_an_unknown_job(client: Client) -> None:
    # GIVEN a job kiosk-1 submitted
    job_id = (await _submit(client, KIOSK_1))["job_id"]
    # WHEN kiosk-2 reads it
    response = await client.get(f"/v1/jobs/{job_id}", headers=KIOSK_2)
    # THEN it is a 404 exactly like a job that does not exist
    unknown = await client.get(f"/v1/jobs/{UNKNOWN_JOB}", headers=KIOSK_2)
    await _not_found_like_an_unknown_job(response, job_id, unknown)
    # AND kiosk-1 and an operator read it
    assert (await flows.expect(await client.get(f"/v1/jobs/{job_id}", headers=KIOSK_1),
                               200))["job_id"] == job_id  # fmt: skip
    await flows.expect(await client.get(f"/v1/jobs/{job_id}", headers=flows.OPERATOR), 200)


async def test_an_attendees_list_holds_only_the_kiosks_own_jobs(client: Client) -> None:
    # GIVEN one attendee with a job from kiosk-1 and one from kiosk-2
    mine = (await _submit(client, KIOSK_1, job_body(attendee_id="att_shared")))["job_id"]
    theirs = (await _submit(client, KIOSK_2, job_body(attendee_id="att_shared")))["job_id"]

    async def listed(headers: dict[str, str]) -> list[str]:
        response = await client.get("/v1/jobs?attendee_id=att_shared", headers=headers)
        return [job["job_id"] for job in (await flows.expect(response, 200))["items"]]

    # WHEN each kiosk and an operator list the attendee's jobs
    # THEN each kiosk sees its own, the operator both
    assert await listed(KIOSK_1) == [mine]
    assert await listed(KIOSK_2) == [theirs]
    assert await listed(flows.OPERATOR) == [mine, theirs]


async def test_another_kiosk_cannot_cancel_a_job_and_learns_nothing(
    client: Client, redis: Redis, settings: CoordinatorSettings
) -> None:
    # GIVEN a queued job of kiosk-1
    job_id = (await _submit(client, KIOSK_1))["job_id"]
    before = await flows.venue_snapshot(redis, settings.venue)
    # WHEN kiosk-2 cancels it
    response = await client.post(f"/v1/jobs/{job_id}/cancel", headers=KIOSK_2)
    # THEN the answer is the unknown-job 404, and nothing was written
    unknown = await client.post(f"/v1/jobs/{UNKNOWN_JOB}/cancel", headers=KIOSK_2)
    await _not_found_like_an_unknown_job(response, job_id, unknown)
    assert await flows.venue_snapshot(redis, settings.venue) == before
    # AND kiosk-1 still can
    cancel = await client.post(f"/v1/jobs/{job_id}/cancel", headers=KIOSK_1)
    assert (await flows.expect(cancel, 200))["state"] == "canceled"


async def test_a_key_held_by_another_kiosks_job_is_a_conflict_that_names_no_job(
    client: Client, redis: Redis, settings: CoordinatorSettings
) -> None:
    # GIVEN a job kiosk-1 submitted
    first = job_body()
    job_id = (await _submit(client, KIOSK_1, first))["job_id"]
    before = await flows.venue_snapshot(redis, settings.venue)
    # WHEN kiosk-2 submits the same key, with the same payload and with another
    same = await client.post("/v1/jobs", json=first, headers=KIOSK_2)
    other = await client.post("/v1/jobs", json={**first, "priority": 5}, headers=KIOSK_2)
    # THEN both are one 409 idempotency_conflict that carries no job id
    same_body, other_body = await flows.expect(same, 409), await flows.expect(other, 409)
    flows.assert_error_shape(same_body, "idempotency_conflict")
    assert same_body == other_body  # a guessed payload is not confirmed either
    assert set(same_body) == {"error"} and job_id not in repr(same_body)
    # AND no job was made
    assert await flows.venue_snapshot(redis, settings.venue) == before
    # AND kiosk-1's own retry is still its duplicate
    retry = await flows.expect(await client.post("/v1/jobs", json=first, headers=KIOSK_1), 200)
    assert retry["duplicate"] is True and retry["job_id"] == job_id


async def test_an_operators_job_is_not_a_kiosks(client: Client) -> None:
    # GIVEN a job an operator submitted
    body = job_body()
    job_id = (await _submit(client, flows.OPERATOR, body))["job_id"]
    # THEN no kiosk sees it, by id or by its key
    await flows.expect(await client.get(f"/v1/jobs/{job_id}", headers=KIOSK_1), 404)
    await flows.expect(await client.post("/v1/jobs", json=body, headers=KIOSK_1), 409)
    # AND the operator sees and cancels kiosks' jobs
    kiosk_job = (await _submit(client, KIOSK_2))["job_id"]
    await flows.expect(await client.get(f"/v1/jobs/{kiosk_job}", headers=flows.OPERATOR), 200)
    cancel = await client.post(f"/v1/jobs/{kiosk_job}/cancel", headers=flows.OPERATOR)
    await flows.expect(cancel, 200)
    assert (await _submit(client, flows.OPERATOR, body, status=200))["job_id"] == job_id


async def test_kiosks_of_one_group_share_their_jobs(make_client: MakeClient) -> None:
    # GIVEN kiosk-1 and a desk in group hall-a, kiosk-2 in none, and a job of kiosk-1
    client = await make_client(tokens=_tokens_with_desk("hall-a", "hall-a"))
    body = job_body(attendee_id="att_grouped")
    job_id = (await _submit(client, KIOSK_1, body))["job_id"]
    # WHEN the desk of the same group reads, lists and resubmits it
    await flows.expect(await client.get(f"/v1/jobs/{job_id}", headers=DESK), 200)
    listed = await client.get("/v1/jobs?attendee_id=att_grouped", headers=DESK)
    assert [j["job_id"] for j in (await flows.expect(listed, 200))["items"]] == [job_id]
    again = await flows.expect(await client.post("/v1/jobs", json=body, headers=DESK), 200)
    # THEN it shares the job: the same duplicate answer as kiosk-1 would get
    assert again["job_id"] == job_id and again["duplicate"] is True
    # AND kiosk-2, in no group, still does not see it
    await flows.expect(await client.get(f"/v1/jobs/{job_id}", headers=KIOSK_2), 404)
    # AND the desk's own job is kiosk-1's to cancel
    desk_job = (await _submit(client, DESK))["job_id"]
    await flows.expect(await client.post(f"/v1/jobs/{desk_job}/cancel", headers=KIOSK_1), 200)


async def test_kiosks_of_different_groups_do_not(make_client: MakeClient) -> None:
    # GIVEN kiosk-1 in hall-a and the desk in hall-b
    client = await make_client(tokens=_tokens_with_desk("hall-a", "hall-b"))
    job_id = (await _submit(client, KIOSK_1))["job_id"]
    # THEN the desk does not see kiosk-1's job
    await flows.expect(await client.get(f"/v1/jobs/{job_id}", headers=DESK), 404)
    await flows.expect(await client.post(f"/v1/jobs/{job_id}/cancel", headers=DESK), 404)


async def test_a_job_accepted_before_submitters_were_recorded_stays_its_kiosks(
    make_client: MakeClient, redis: Redis, settings: CoordinatorSettings
) -> None:
    # GIVEN kiosk-1 and a desk in group hall-a, and a job of kiosk-1 as a release that
    # recorded only the submitting token (`source`) wrote it
    client = await make_client(tokens=_tokens_with_desk("hall-a", "hall-a"))
    job_id = (await _submit(client, KIOSK_1))["job_id"]
    await redis.hdel(VenueKeys(settings.venue).job(job_id), "kiosk", "kiosk_group")
    # THEN kiosk-1 still reads it, the operator too, but nobody else: not even its group
    await flows.expect(await client.get(f"/v1/jobs/{job_id}", headers=KIOSK_1), 200)
    await flows.expect(await client.get(f"/v1/jobs/{job_id}", headers=flows.OPERATOR), 200)
    await flows.expect(await client.get(f"/v1/jobs/{job_id}", headers=DESK), 404)
    await flows.expect(await client.get(f"/v1/jobs/{job_id}", headers=KIOSK_2), 404)


async def test_a_reprint_belongs_to_the_kiosk_of_the_original(client: Client) -> None:
    # GIVEN a job of kiosk-1, printed
    job_id = (await _submit(client, KIOSK_1))["job_id"]
    leased = await flows.lease_one(client)
    await flows.start(client, job_id, leased["lease_id"])
    await flows.ack(client, job_id, leased["lease_id"])
    # WHEN an operator reprints it
    reprint = await client.post(f"/v1/jobs/{job_id}/reprint", json={"reason": "smudged"},
                                headers=flows.OPERATOR)  # fmt: skip
    reprint_id = (await flows.expect(reprint, 201))["job_id"]
    # THEN kiosk-1 sees the reprint, kiosk-2 does not
    await flows.expect(await client.get(f"/v1/jobs/{reprint_id}", headers=KIOSK_1), 200)
    await flows.expect(await client.get(f"/v1/jobs/{reprint_id}", headers=KIOSK_2), 404)
