"""The control API that tests and the demo drive the emulator with."""

from __future__ import annotations

import pytest
from aiohttp import ClientSession

from badgeline.emulator import Fault, PrinterEmulator
from badgeline.emulator.escpos import EscPosFamily
from tests.emulator.escpos_builders import badge_job


async def test_given_a_fresh_printer_then_status_reports_its_condition(
    emulator: PrinterEmulator, control: ClientSession
):
    async with control.get("/status") as response:
        assert response.status == 200
        body = await response.json()

    assert body == {
        "fault": "none",
        "ms_per_badge": 0,
        "write_only": False,
        "printed": 0,
        "queued": 0,
        "printing": False,
        "buffer_bytes": 16384,
        "held_bytes": 0,
        "discarded": 0,
        "abandoned": 0,
        "status_queries": 0,
        "process_ids_answered": 0,
        "process_ids_dropped": 0,
        "connections": 0,
        "connections_total": 0,
    }


@pytest.mark.parametrize("fault", sorted(EscPosFamily.faults))
async def test_given_a_valid_fault_when_posted_then_the_printer_takes_it(
    emulator: PrinterEmulator, control: ClientSession, fault: str
):
    async with control.post("/fault", json={"fault": fault}) as response:
        assert response.status == 200
        assert (await response.json())["fault"] == fault

    assert emulator.fault == Fault(fault)


@pytest.mark.parametrize("fault", ["ribbon_out", "paused"])
async def test_given_a_label_printer_fault_then_an_escpos_printer_refuses_it_by_name(
    emulator: PrinterEmulator, control: ClientSession, fault: str
):
    # GIVEN an ESC/POS printer, which has no ribbon and no pause key
    # WHEN a label printer's fault is posted
    async with control.post("/fault", json={"fault": fault}) as response:
        assert response.status == 422
        error = (await response.json())["error"]
    # THEN it is refused, saying which faults this printer has, and nothing changes
    assert error["code"] == "validation_failed"
    assert error["fields"][0]["loc"] == ["fault"]
    assert f"no fault {fault}" in error["message"] and "paper_out" in error["message"]
    assert emulator.fault == Fault.NONE


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"fault": "on_fire"}, "fault"),
        ({"fault": 3}, "fault"),
        ({"fault": None}, "fault"),
        ({}, "fault"),
        ({"fault": "jam", "extra": 1}, "extra"),
        ([], None),
    ],
)
async def test_given_an_invalid_fault_then_422_names_the_field_and_nothing_changes(
    emulator: PrinterEmulator, control: ClientSession, body: object, field: str | None
):
    async with control.post("/fault", json=body) as response:
        assert response.status == 422
        error = (await response.json())["error"]

    assert error["code"] == "validation_failed"
    assert isinstance(error["message"], str)
    assert error["fields"]
    if field is not None:
        assert [field] in [problem["loc"] for problem in error["fields"]]
    assert all(set(problem) == {"loc", "msg"} for problem in error["fields"])
    assert emulator.fault == Fault.NONE


@pytest.mark.parametrize("path", ["/fault", "/speed"])
async def test_given_a_body_that_is_not_json_then_400_malformed_json(
    control: ClientSession, path: str
):
    async with control.post(path, data=b"{fault: jam") as response:
        assert response.status == 400
        error = (await response.json())["error"]

    assert error["code"] == "malformed_json"
    assert error["fields"] == []


async def test_given_a_speed_when_posted_then_slow_mode_is_set(
    emulator: PrinterEmulator, control: ClientSession
):
    async with control.post("/speed", json={"ms_per_badge": 250}) as response:
        assert response.status == 200
        assert (await response.json())["ms_per_badge"] == 250

    assert emulator.ms_per_badge == 250


@pytest.mark.parametrize("value", [-1, 600_001, "fast", 1.5, True, None])
async def test_given_an_invalid_speed_then_422_and_the_speed_is_unchanged(
    emulator: PrinterEmulator, control: ClientSession, value: object
):
    async with control.post("/speed", json={"ms_per_badge": value}) as response:
        assert response.status == 422
        error = (await response.json())["error"]

    assert error["code"] == "validation_failed"
    assert error["fields"][0]["loc"] == ["ms_per_badge"]
    assert emulator.ms_per_badge == 0


async def test_given_prints_then_printed_lists_one_row_per_print(
    emulator: PrinterEmulator, control: ClientSession, connect
):
    client = await connect()
    await client.send(badge_job("row-1") + badge_job(None) + badge_job("row-1"))
    await emulator.wait_until(lambda printer: len(printer.printed) == 3)

    async with control.get("/printed") as response:
        assert response.status == 200
        rows = await response.json()

    assert [row["job_id"] for row in rows] == ["row-1", None, "row-1"]  # duplicates stay visible
    for row, badge in zip(rows, emulator.printed, strict=True):
        assert set(row) == {"job_id", "at", "started_at", "png"}
        assert row["started_at"] <= row["at"]
        assert row["at"] == badge.at
        assert row["png"] == str(badge.png)


async def test_given_prints_when_reset_is_posted_then_the_record_is_cleared(
    emulator: PrinterEmulator, control: ClientSession, connect
):
    client = await connect()
    await client.send(badge_job("to-forget"))
    await emulator.wait_until(lambda printer: len(printer.printed) == 1)
    emulator.fault = Fault.PAPER_LOW

    async with control.post("/reset") as response:
        assert response.status == 200
        status = await response.json()

    assert status["printed"] == 0
    assert status["fault"] == "paper_low"  # the condition is not part of the record
    async with control.get("/printed") as response:
        assert await response.json() == []


async def test_given_an_unknown_path_or_method_then_the_error_has_the_project_shape(
    control: ClientSession,
):
    async with control.get("/nowhere") as response:
        assert response.status == 404
        assert (await response.json())["error"]["code"] == "not_found"
    async with control.get("/fault") as response:
        assert response.status == 405
        assert response.headers["Allow"] == "POST"
        assert (await response.json())["error"]["code"] == "method_not_allowed"
