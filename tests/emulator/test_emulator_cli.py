"""`badgeline emulator` as a process: starts, prints, stops cleanly on SIGTERM."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
from pathlib import Path

import pytest
from aiohttp import ClientSession

import badgeline
from badgeline.cli import main
from tests.emulator.escpos_builders import badge_job, status_query

REPO_ROOT = Path(badgeline.__file__).resolve().parent.parent
LISTENING = re.compile(rb"emulator listening printer=[\d.]+:(\d+) control=[\d.]+:(\d+)")
WAIT_S = 20.0


async def read_ports(stderr: asyncio.StreamReader) -> tuple[int, int]:
    while line := await stderr.readline():
        if match := LISTENING.search(line):
            return int(match.group(1)), int(match.group(2))
    raise AssertionError("the emulator exited before listening")


async def poll_printed(session: ClientSession, count: int) -> list[dict[str, object]]:
    """The process is out of reach of wait_until: poll its control API instead."""
    while True:
        async with session.get("/printed") as response:
            rows: list[dict[str, object]] = await response.json()
        if len(rows) >= count:
            return rows
        await asyncio.sleep(0.05)


async def test_given_the_cli_when_started_then_it_serves_and_exits_cleanly_on_sigterm(
    tmp_path: Path,
):
    # GIVEN `badgeline emulator` started on free ports
    out_dir = tmp_path / "cli-out"
    environment = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "badgeline.cli", "emulator",
        "--port", "0", "--control-port", "0", "--out", str(out_dir), "--fault", "paper_low",
        stderr=asyncio.subprocess.PIPE, env=environment, cwd=tmp_path,
    )  # fmt: skip
    assert process.stderr is not None
    try:
        port, control_port = await asyncio.wait_for(read_ports(process.stderr), WAIT_S)
        # WHEN a host queries its status and prints a badge
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(status_query(4) + badge_job("cli-1"))
        await writer.drain()
        assert await asyncio.wait_for(reader.readexactly(1), WAIT_S) == b"\x1e"
        async with ClientSession(f"http://127.0.0.1:{control_port}") as session:
            rows = await asyncio.wait_for(poll_printed(session, 1), WAIT_S)
        writer.close()
        await writer.wait_closed()
        # THEN the badge is recorded with its picture in --out
        assert [row["job_id"] for row in rows] == ["cli-1"]
        assert Path(str(rows[0]["png"])).parent == out_dir.resolve()
        assert Path(str(rows[0]["png"])).is_file()
        # AND SIGTERM stops it with exit status 0
        process.send_signal(signal.SIGTERM)
        remaining_log = await asyncio.wait_for(process.stderr.read(), WAIT_S)
        assert await asyncio.wait_for(process.wait(), WAIT_S) == 0
        assert b"Traceback" not in remaining_log
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_given_a_taken_port_then_the_cli_exits_with_an_error(tmp_path: Path):
    blocker = await asyncio.start_server(lambda reader, writer: None, "127.0.0.1", 0)
    taken_port = blocker.sockets[0].getsockname()[1]
    try:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "badgeline.cli", "emulator",
            "--port", str(taken_port), "--control-port", "0", "--out", str(tmp_path),
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        )  # fmt: skip
        _, log = await asyncio.wait_for(process.communicate(), WAIT_S)
    finally:
        blocker.close()
        await blocker.wait_closed()

    assert process.returncode == 1
    assert b"could not start" in log
    assert b"Traceback" not in log


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (["--port", "99999"], "argument --port: must be within 0..65535"),
        (["--control-port", "-1"], "argument --control-port: must be within 0..65535"),
        (["--log-level", "LOUD"], "argument --log-level: invalid choice: 'LOUD'"),
    ],
)
def test_a_bad_option_is_named_in_one_line_not_a_traceback(
    capsys: pytest.CaptureFixture[str], options: list[str], named: str
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["emulator", *options])

    assert exit_info.value.code == 2
    assert named in capsys.readouterr().err
