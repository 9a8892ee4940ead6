"""The media a printer has loaded, through the control API and the command line, and
`badgeline emulator --language` as a process."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest
from aiohttp import ClientSession
from PIL import Image

from tests.emulator.conftest import StartPrinter
from tests.emulator.label_builders import CRLF, ETX, host_status_fields, zpl
from tests.emulator.test_emulator_cli import REPO_ROOT, WAIT_S, poll_printed, read_ports


async def test_given_an_escpos_printer_then_media_reports_its_receipt_roll(
    start_printer: StartPrinter,
):
    printer, _ = await start_printer()
    url = f"http://127.0.0.1:{printer.control_port}/media"
    async with ClientSession() as control, control.get(url) as response:
        assert response.status == 200
        assert await response.json() == {
            "language": "escpos", "model": "ESC/POS receipt printer",
            "dpi": 203, "width_dots": 576, "length_dots": 0,
        }  # fmt: skip


async def test_given_new_media_posted_then_the_next_label_is_laid_out_on_it(
    start_printer: StartPrinter,
):
    # GIVEN a Zebra with its default 4 x 3 in labels at 203 dpi
    printer, client = await start_printer(language="zpl")
    async with ClientSession(f"http://127.0.0.1:{printer.control_port}") as control:
        # WHEN 300 dpi media 2 x 1 in is loaded (a field left out keeps its value)
        async with control.post("/media", json={"dpi": 300, "width_dots": 600}) as response:
            assert response.status == 200
            assert (await response.json())["width_dots"] == 600
        async with control.post("/media", json={"length_dots": 300}) as response:
            assert (await response.json()) == {
                "language": "zpl", "model": "ZD421", "dpi": 300, "width_dots": 600,
                "length_dots": 300,
            }  # fmt: skip
    await client.send(zpl("^XA^FO10,10^GB100,100,4^FS^XZ~HS"))
    fields = host_status_fields(await client.read_until(ETX + CRLF, times=3))
    await printer.wait_until(lambda p: len(p.printed) == 1)
    # THEN the status reports it and the label is printed on it
    assert fields[0][3] == "0300"
    assert printer.printed[0].raster is not None
    assert printer.printed[0].raster.size == (600, 300)


@pytest.mark.parametrize(
    ("options", "body", "named"),
    [
        ({"language": "zpl"}, {"width_dots": 2000}, "832-dot head"),
        ({"language": "zpl"}, {"dpi": 600}, "203 or 300 dpi"),
        ({"language": "brother-ql"}, {"width_dots": 700}, "696x0 (62 mm continuous)"),
        ({}, {"dpi": 300}, "203 dpi"),
    ],
)
async def test_given_media_the_printer_cannot_load_then_422_says_what_it_takes(
    start_printer: StartPrinter, options: dict[str, object], body: dict[str, int], named: str
):
    printer, _ = await start_printer(**options)
    before = printer.media
    url = f"http://127.0.0.1:{printer.control_port}/media"
    async with ClientSession() as control, control.post(url, json=body) as response:
        assert response.status == 422
        error = (await response.json())["error"]
    assert error["code"] == "validation_failed" and named in error["message"]
    assert error["fields"] == [{"loc": ["media"], "msg": error["message"]}]
    assert printer.media == before


async def test_given_a_media_body_with_an_unknown_field_then_422_names_it(
    start_printer: StartPrinter,
):
    printer, _ = await start_printer(language="zpl")
    url = f"http://127.0.0.1:{printer.control_port}/media"
    async with ClientSession() as control, control.post(url, json={"width_mm": 62}) as response:
        assert response.status == 422
        fields = (await response.json())["error"]["fields"]
    assert ["width_mm"] in [problem["loc"] for problem in fields]


async def test_given_the_cli_with_language_zpl_then_it_speaks_zpl_on_the_media_given(
    tmp_path: Path,
):
    # GIVEN `badgeline emulator --language zpl` on 300 dpi media
    out_dir = tmp_path / "zpl-out"
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "badgeline.cli", "emulator", "--language", "zpl",
        "--dpi", "300", "--media-width", "1200", "--label-length", "600",
        "--port", "0", "--control-port", "0", "--out", str(out_dir),
        stderr=asyncio.subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        cwd=tmp_path,
    )  # fmt: skip
    assert process.stderr is not None
    try:
        port, control_port = await asyncio.wait_for(read_ports(process.stderr), WAIT_S)
        # WHEN a host asks ~HS and prints a label
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"~HS" + zpl("^XA^FO50,50^GB300,200,8^FS^FO50,300^FDjob cli-zpl-1^FS^XZ"))
        await writer.drain()
        reply = await asyncio.wait_for(reader.readuntil(ETX + CRLF), WAIT_S)
        async with ClientSession(f"http://127.0.0.1:{control_port}") as session:
            rows = await asyncio.wait_for(poll_printed(session, 1), WAIT_S)
            async with session.get("/media") as response:
                media = await response.json()
        writer.close()
        await writer.wait_closed()
        # THEN it answered as a Zebra, printed the label at the media's dots, and says so
        assert reply.startswith(b"\x02030,0,0,0600,")
        assert [row["job_id"] for row in rows] == ["cli-zpl-1"]
        with Image.open(str(rows[0]["png"])) as png:
            assert png.size == (1200, 600)
        assert (media["language"], media["dpi"], media["width_dots"]) == ("zpl", 300, 1200)
        process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(process.wait(), WAIT_S) == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (["--language", "brother-ql", "--media-width", "700"], "loads DK rolls"),
        (["--language", "brother-ql", "--model", "QL-9"], "brother-ql models are QL-820NWB"),
        (["--fault", "paused"], "has no fault paused"),
        (["--language", "zpl", "--dpi", "600"], "203 or 300 dpi"),
    ],
)
async def test_given_options_the_printer_cannot_have_then_the_cli_says_why_in_one_line(
    tmp_path: Path, options: list[str], named: str
):
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "badgeline.cli", "emulator", *options,
        "--port", "0", "--control-port", "0", "--out", str(tmp_path),
        stderr=asyncio.subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )  # fmt: skip
    _, log = await asyncio.wait_for(process.communicate(), WAIT_S)
    assert process.returncode == 2
    assert named.encode() in log and b"could not start" in log
    assert b"Traceback" not in log
