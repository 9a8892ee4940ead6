"""Cursor pagination: every list, paged with small limits, gives every item once, in
its order, also while items come and go between pages; a cursor of another list,
a cursor that is not one, and a limit out of range are refused naming the field."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from badgeline.coordinator.api.paging import encode_cursor
from tests.conftest import KNOWN_TEST_PRINTERS
from tests.coordinator import flows
from tests.coordinator.conftest import MakeClient

Client = TestClient[Any, Any]
Query = dict[str, str]


async def page(client: Client, path: str, query: Query, headers: Any = flows.OPERATOR) -> Any:
    return await flows.expect(await client.get(path, params=query, headers=headers), 200)


async def every_page(client: Client, path: str, limit: int, query: Query | None = None,
                     headers: Any = flows.OPERATOR) -> tuple[list[Any], int]:  # fmt: skip
    """Every item of a list, read `limit` at a time along `next`; and the pages read."""
    items: list[Any] = []
    after: str | None = None
    for pages in range(1, 100):
        asked = {**(query or {}), "limit": str(limit), **({"after": after} if after else {})}
        body = await page(client, path, asked, headers)
        assert set(body) >= {"items", "next"}, body
        assert len(body["items"]) <= limit, body
        items += body["items"]
        if body["next"] is None:
            return items, pages
        assert body["items"], "a page that says there is more has items"
        after = body["next"]
    raise AssertionError(f"{path} never ended")


def ids(items: list[Any], field: str = "job_id") -> list[str]:
    return [item[field] for item in items]


async def submit_many(client: Client, count: int, **overrides: Any) -> list[str]:
    return [(await flows.submit(client, **overrides))["job_id"] for _ in range(count)]


async def test_an_attendees_jobs_page_oldest_first_each_once(client: Client) -> None:
    # GIVEN five jobs of one attendee, and one of another
    mine = await submit_many(client, 5, attendee_id="att_paged")
    await flows.submit(client, attendee_id="att_other")
    # WHEN the kiosk reads them two at a time
    items, pages = await every_page(client, "/v1/jobs", 2, {"attendee_id": "att_paged"},
                                    flows.KIOSK)  # fmt: skip
    # THEN it gets each of its jobs once, in the order it submitted them, in three pages
    assert ids(items) == mine and pages == 3


async def test_a_queue_pages_in_print_order_while_it_drains_and_grows(client: Client) -> None:
    await flows.heartbeat(client)
    queued = await submit_many(client, 6)
    first = await page(client, "/v1/queues/printer-a", {"limit": "2"})
    assert ids(first["items"]) == queued[:2] and first["depth"] == 6
    # WHEN, between pages, the head is leased away and a new job joins the tail
    assert (await flows.lease_one(client))["job_id"] == queued[0]
    added = (await flows.submit(client))["job_id"]
    # THEN the next pages carry on after the last job seen: none twice, none skipped,
    # the new job at the end (it joined behind the position)
    rest: list[Any] = []
    body = first
    while body["next"] is not None:
        body = await page(client, "/v1/queues/printer-a", {"limit": "2", "after": body["next"]})
        rest += body["items"]
    assert ids(rest) == [*queued[2:], added]


async def test_dead_letters_page_oldest_first_past_the_old_cap(make_client: MakeClient) -> None:
    # GIVEN a printer whose queue holds one job, and seven more shed to the dead letters
    # (some of them in the same millisecond: the job id breaks the tie)
    client = await make_client(high_water_mark=1, spill_named_targets=False)
    await flows.heartbeat(client)
    await flows.submit(client)
    shed = [(await flows.submit(client, status=503))["job_id"] for _ in range(7)]
    # WHEN an operator reads them three at a time THEN each comes once, in shed order
    items, pages = await every_page(client, "/v1/dead-letters", 3)
    assert sorted(ids(items)) == sorted(shed) and len(items) == 7 and pages == 3
    assert [d["dead_lettered_at"] for d in items] == sorted(d["dead_lettered_at"] for d in items)


async def test_failovers_page_newest_first_and_later_ones_do_not_shift_the_pages(
    client: Client,
) -> None:
    for printer_id in KNOWN_TEST_PRINTERS:
        await flows.heartbeat(client, printer_id)

    async def drain(printer_id: str) -> str:
        response = await client.post(f"/v1/printers/{printer_id}/drain", headers=flows.OPERATOR)
        decision_id: str = (await flows.expect(response, 200))["decision_id"]
        return decision_id

    made = [await drain(printer_id) for printer_id in KNOWN_TEST_PRINTERS]
    # WHEN the first page (the two newest) is read, then another printer is drained
    first = await page(client, "/v1/failovers", {"limit": "2"})
    assert ids(first["items"], "decision_id") == made[::-1][:2]
    later = await drain("printer-a")
    # THEN the pages after it hold the older decisions, each once; the new one is
    # ahead of the first page, and a new first page starts with it
    rest: list[Any] = []
    body = first
    while body["next"] is not None:
        body = await page(client, "/v1/failovers", {"limit": "2", "after": body["next"]})
        rest += body["items"]
    assert ids(rest, "decision_id") == made[::-1][2:]
    newest = await page(client, "/v1/failovers", {"limit": "1"})
    assert ids(newest["items"], "decision_id") == [later]
    # AND a cursor whose decision has left the list (it keeps the latest 10,000) ends
    # the paging: everything older has left with it
    gone = encode_cursor("failovers", ["drain-printer-a-000000"])
    assert await page(client, "/v1/failovers", {"after": gone}) == {"items": [], "next": None}


async def test_printers_queues_and_alerts_page_by_printer(client: Client) -> None:
    # GIVEN five printers that reported, four of them dead
    for printer_id in KNOWN_TEST_PRINTERS:
        await flows.heartbeat(client, printer_id, jammed=printer_id != "printer-a")
    expected = sorted(KNOWN_TEST_PRINTERS)
    # THEN printers and queues page through every printer once, by id
    printers, pages = await every_page(client, "/v1/printers", 2)
    assert ids(printers, "printer_id") == expected and pages == 3
    queues, _ = await every_page(client, "/v1/queues", 2)
    assert ids(queues, "printer_id") == expected
    # AND the alerts page through each dead printer's alert once, then the venue's
    alerts, _ = await every_page(client, "/v1/alerts", 1)
    whole = (await page(client, "/v1/alerts", {}))["items"]
    assert alerts == whole
    assert [(a["kind"], a["printer_id"]) for a in alerts][:4] == [
        ("printer_dead", p) for p in expected if p != "printer-a"
    ]


async def test_alert_events_page_newest_first(client: Client) -> None:
    # GIVEN a printer whose paper went low and back five times (ten events)
    await flows.heartbeat(client)
    for _ in range(5):
        await flows.heartbeat(client, paper="low")
        await flows.heartbeat(client, paper="ok")
    # WHEN they are read three at a time THEN all ten come, newest first
    events, pages = await every_page(client, "/v1/alerts/events", 3)
    assert [e["kind"] for e in events] == ["paper_ok", "paper_low"] * 5 and pages == 4
    assert [e["at"] for e in events] == sorted((e["at"] for e in events), reverse=True)


async def test_reconciliation_findings_page_and_the_counts_cover_them_all(client: Client) -> None:
    await flows.heartbeat(client)
    waiting = await submit_many(client, 5)
    # WHEN the findings are read two at a time, every queued job overdue at once
    items, pages = await every_page(client, "/v1/reconcile", 2, {"deadline_s": "0"})
    # THEN each waiting job is found once, and the counts beside every page say five
    assert [(f["finding"], f["job_id"]) for f in items] == [
        ("not_terminal", job_id) for job_id in sorted(waiting)
    ]
    assert pages == 3
    report = await page(client, "/v1/reconcile", {"deadline_s": "0", "limit": "1"})
    assert report["findings"] == {"printed_more_than_once": 0, "possible_duplicates": 0,
                                  "not_terminal": 5}  # fmt: skip
    assert report["counts"]["open"] == 5 and report["counts"]["unaccounted"] == 0


async def test_statistics_rows_page_by_their_key(client: Client) -> None:
    # GIVEN a badge printed on each of three printers
    for printer_id in ("printer-a", "printer-b", "printer-c"):
        await flows.heartbeat(client, printer_id)
        job_id = (await flows.submit(client, printer_target=printer_id))["job_id"]
        leased = await flows.lease_one(client, printer_id)
        await flows.start(client, job_id, leased["lease_id"], printer_id)
        await flows.ack(client, job_id, leased["lease_id"], printer_id=printer_id)
    # WHEN the rows by printer are read one at a time THEN each printer's row comes once
    rows, pages = await every_page(client, "/v1/stats", 1, {"by": "printer"})
    assert [(r["printer_id"], r["printed"]) for r in rows] == [
        ("printer-a", 1), ("printer-b", 1), ("printer-c", 1)
    ]  # fmt: skip
    assert pages == 3


# --------------------------------------------------------------- refusals


async def _refused(client: Client, path: str, query: Query, field: str) -> str:
    response = await client.get(path, params=query, headers=flows.OPERATOR)
    body = await flows.expect(response, 422)
    flows.assert_error_shape(body, "validation_failed")
    assert [f["loc"] for f in body["error"]["fields"]] == [[field]], body
    message: str = body["error"]["message"]
    assert field in message, body
    return message + " / " + body["error"]["fields"][0]["msg"]


async def test_a_cursor_of_another_list_is_refused_naming_after(client: Client) -> None:
    await flows.heartbeat(client)
    await flows.heartbeat(client, "printer-b")
    await submit_many(client, 2)
    await submit_many(client, 2, printer_target="printer-b")
    printers_cursor = (await page(client, "/v1/printers", {"limit": "1"}))["next"]
    queue_a_cursor = (await page(client, "/v1/queues/printer-a", {"limit": "1"}))["next"]
    assert printers_cursor and queue_a_cursor
    # WHEN a cursor is sent to a list it does not belong to: another route, the same
    # route about another printer, attendee or grouping
    refusals = [
        ("/v1/dead-letters", {"after": printers_cursor}),
        ("/v1/queues/printer-b", {"after": queue_a_cursor}),
        ("/v1/jobs", {"attendee_id": "att_someone", "after": encode_cursor(
            "jobs:att_else", [1.0, "job_0123456789abcdef"])}),
        ("/v1/stats", {"by": "hour", "after": encode_cursor("stats:printer", ["printer-a"])}),
    ]  # fmt: skip
    for path, query in refusals:
        # THEN it is a 422 naming `after`, saying to send this list's own `next`
        message = await _refused(client, path, query, "after")
        assert "another list" in message and "leave `after` out" in message, message


@pytest.mark.parametrize(("path", "cursor"), [
    ("/v1/printers", "not a cursor!"),                                # not base64url
    ("/v1/printers", "bm90IGpzb24"),                                  # base64 of "not json"
    ("/v1/printers", encode_cursor("printers", [1, 2])),              # a position of another shape
    ("/v1/dead-letters", encode_cursor("dead-letters", ["soon", "job_x"])),  # a score not a number
    ("/v1/failovers", "x" * 600),                                     # longer than any cursor
])  # fmt: skip
async def test_a_cursor_that_is_not_one_is_refused(client: Client, path: str, cursor: str) -> None:
    message = await _refused(client, path, {"after": cursor}, "after")
    assert "leave `after` out" in message or "at most" in message, message


@pytest.mark.parametrize("limit", ["0", "501", "-3", "ten", "2.5"])
async def test_a_limit_out_of_range_is_refused_naming_it(client: Client, limit: str) -> None:
    for path in ("/v1/printers", "/v1/queues/printer-a", "/v1/failovers"):
        await _refused(client, path, {"limit": limit}, "limit")
