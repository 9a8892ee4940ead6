"""A pause says why: the reason is kept with the pause and shown wherever the printer
is (its answer, `GET /v1/printers`) until the pause ends; a drain says it was one."""

from __future__ import annotations

from typing import Any

from aiohttp.test_utils import TestClient

from tests.coordinator import flows

Client = TestClient[Any, Any]


async def _pause(client: Client, body: Any, status: int = 200) -> Any:
    response = await client.post("/v1/printers/printer-a/pause", json=body, headers=flows.OPERATOR)
    return await flows.expect(response, status)


async def _listed(client: Client) -> Any:
    printers = await flows.expect(await client.get("/v1/printers", headers=flows.OPERATOR), 200)
    return next(p for p in printers["items"] if p["printer_id"] == "printer-a")


async def test_the_reason_is_shown_while_paused_and_gone_after(client: Client) -> None:
    await flows.heartbeat(client, "printer-a")
    # WHEN an operator pauses printer-a for ten minutes, saying why
    answer = await _pause(client, {"for_s": 600.0, "reason": "  paper roll change "})
    # THEN the answer and the printers list carry the reason (trimmed)
    assert (answer["paused"], answer["paused_reason"]) == (True, "paper roll change")
    assert (await _listed(client))["paused_reason"] == "paper roll change"
    # AND once resumed there is no reason to show
    resumed = await flows.expect(await client.post("/v1/printers/printer-a/resume",
                                                   headers=flows.OPERATOR), 200)  # fmt: skip
    assert (resumed["paused"], resumed["paused_reason"]) == (False, None)
    # AND a pause without one has none
    assert (await _pause(client, {}))["paused_reason"] is None


async def test_a_drain_pauses_with_its_reason(client: Client) -> None:
    await flows.heartbeat(client, "printer-a")
    await flows.expect(await client.post("/v1/printers/printer-a/drain", json={},
                                         headers=flows.OPERATOR), 200)  # fmt: skip
    assert (await _listed(client))["paused_reason"] == "drained by operator:ops"


async def test_a_reason_over_200_characters_is_a_422_naming_it(client: Client) -> None:
    await flows.heartbeat(client, "printer-a")
    refused = await _pause(client, {"reason": "x" * 10_000}, status=422)
    flows.assert_error_shape(refused, "validation_failed")
    assert refused["error"]["fields"] == [
        {"loc": ["reason"], "msg": "String should have at most 200 characters"}
    ]
    assert (await _listed(client))["paused"] is False
    empty = await _pause(client, {"reason": ""}, status=422)
    assert [f["loc"] for f in empty["error"]["fields"]] == [["reason"]]
