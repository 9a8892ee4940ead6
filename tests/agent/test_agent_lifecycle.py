"""Stopping and starting the agent: a stop finishes the badge in hand and leaves the rest
for the next start; `badgeline agent` runs until SIGTERM and logs JSON lines."""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from badgeline.agent import main as agent_main
from badgeline.emulator import PrinterEmulator
from tests.agent.conftest import Kiosk, LiveCoordinator, agent_settings
from tests.agent.relay import ReplyHoldingRelay
from tests.conftest import agent_token
from tests.helpers import taken_port, wait_for


async def test_a_stop_finishes_the_badge_in_hand_and_the_next_start_prints_the_rest(
    coordinator: LiveCoordinator, kiosk: Kiosk, start_emulator: Any, run_agent: Any,
    badge_ref: str, tmp_path: Path,
) -> None:  # fmt: skip
    # GIVEN an agent in the middle of a print (its printer slow to confirm) with the
    # next badge leased and ready behind it
    emulator: PrinterEmulator = await start_emulator()
    relay = ReplyHoldingRelay("127.0.0.1", emulator.port)
    await relay.start()
    settings = agent_settings(
        "printer-a", coordinator, emulator, tmp_path / "a",
        printer={"kind": "emulator", "host": "127.0.0.1", "port": relay.port, "timeout_s": 10},
        probe_interval_s=60,
    )  # fmt: skip
    try:
        agent = await run_agent(settings)
        await wait_for(lambda: _ready(agent))
        relay.hold_replies()
        first = await kiosk.submit(badge_ref, "printer-a")
        second = await kiosk.submit(badge_ref, "printer-a")
        await emulator.wait_until(lambda e: len(e.printed) == 1)
        await wait_for(lambda: _leased_here(agent, second))
        # WHEN it is told to stop, and only then the printer confirms
        stopping = asyncio.create_task(agent.stop())
        await wait_for(lambda: _stopping(agent))
        relay.release_replies()
        await stopping
    finally:
        await relay.stop()
    # THEN the badge in hand was finished and reported, and the next one was not started
    await wait_for(lambda: _state_is(kiosk, first, "printed"))
    assert await kiosk.state(second) == "leased"
    # WHEN the agent starts again
    restarted = await run_agent(agent_settings("printer-a", coordinator, emulator,
                                               tmp_path / "a"))  # fmt: skip
    # THEN nothing was left uncertain, the waiting badge gets its grant, and each prints once
    assert restarted.recovery.marked_uncertain == []
    assert [entry.job_id for entry in restarted.recovery.grants_to_retry] == [second]
    await wait_for(lambda: _state_is(kiosk, second, "printed"))
    assert [badge.job_id for badge in emulator.printed] == [first, second]


async def test_the_agent_command_prints_until_sigterm_and_logs_json_lines(
    coordinator: LiveCoordinator, kiosk: Kiosk, start_emulator: Any, badge_ref: str,
    tmp_path: Path,
) -> None:  # fmt: skip
    # GIVEN `badgeline agent --config agent.toml` running as its own process
    emulator: PrinterEmulator = await start_emulator()
    config = tmp_path / "agent.toml"
    config.write_text(
        f'printer_id = "printer-a"\ncoordinator_url = "{coordinator.url}"\n'
        f'token = "{agent_token("printer-a")}"\nstate_dir = "{tmp_path / "state"}"\n'
        f"heartbeat_interval_s = 0.2\nlease_wait_s = 1\nstatus_port = 0\nmdns = false\n"
        f'badge_file_roots = ["{tmp_path}"]\n'
        f'[printer]\nkind = "emulator"\nhost = "127.0.0.1"\nport = {emulator.port}\n'
    )
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "badgeline.cli", "agent", "--config", str(config),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        # WHEN a badge is submitted for its printer
        job_id = await kiosk.submit(badge_ref, "printer-a")
        # THEN it prints, and the job ends printed
        await emulator.wait_until(lambda e: len(e.printed) == 1, timeout=30)
        await wait_for(lambda: _state_is(kiosk, job_id, "printed"), timeout_s=15)
    finally:
        # WHEN it gets SIGTERM
        process.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.wait_for(process.communicate(), timeout=30)
    # THEN it stops cleanly, having logged one JSON object per line
    assert process.returncode == 0, stderr.decode()[-2000:]
    lines = [json.loads(line) for line in stderr.decode().splitlines() if line.strip()]
    events = [line.get("event") for line in lines]
    assert {"agent_started", "badge_printed", "ack_confirmed", "agent_stopped"} <= set(events)
    printed = next(line for line in lines if line.get("event") == "badge_printed")
    assert printed["job_id"] == job_id and printed["printer_id"] == "printer-a"
    assert printed["idempotency_key"] and printed["correlation_id"]
    assert [badge.job_id for badge in emulator.printed] == [job_id]


def test_a_config_error_exits_2_naming_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "agent.toml"
    config.write_text('printer_id = "printer-a"\ntoken = "t"\nprefetch = 0\n'
                      '[printer]\nkind = "emulator"\nhost = "127.0.0.1"\n')  # fmt: skip
    parser = argparse.ArgumentParser()
    agent_main.add_arguments(parser)
    assert agent_main.run(parser.parse_args(["--config", str(config)])) == 2
    assert "prefetch" in capsys.readouterr().err


@pytest.mark.usefixtures("own_root_logging")  # run() sets the level to ERROR
def test_a_start_up_failure_is_said_even_at_log_level_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN an agent whose status port is taken, logging errors only
    with taken_port() as port:
        config = tmp_path / "agent.toml"
        config.write_text(
            'printer_id = "printer-a"\ntoken = "t"\ncoordinator_url = "http://127.0.0.1:9"\n'
            f'mdns = false\nlog_level = "ERROR"\nstatus_port = {port}\n'
            '[printer]\nkind = "emulator"\nhost = "127.0.0.1"\nport = 9\n'
        )
        parser = argparse.ArgumentParser()
        agent_main.add_arguments(parser)
        args = parser.parse_args(["--config", str(config), "--state-dir", str(tmp_path / "s")])
        # WHEN it starts THEN it exits 1 and says why
        assert agent_main.run(args) == 1
    err = capsys.readouterr().err
    assert "badgeline agent: cannot start: " in err and "address already in use" in err


def test_importing_the_agent_service_does_not_import_redis() -> None:
    # A Pi runs only the agent: the coordinator's Redis stack must not load with it.
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import badgeline.agent.service"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    modules = {line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines()}
    assert "badgeline.agent.service" in modules
    assert not {module for module in modules if module.split(".")[0] in ("redis", "hiredis")}


async def _ready(agent: Any) -> bool:
    return bool(agent.watch.ready)


async def _stopping(agent: Any) -> bool:
    return bool(agent.stopping)


async def _leased_here(agent: Any, job_id: str) -> bool:
    entry = await agent.journal.get(job_id)
    return entry is not None and entry.state == "leased"


async def _state_is(kiosk: Kiosk, job_id: str, state: str) -> bool:
    return await kiosk.state(job_id) == state
