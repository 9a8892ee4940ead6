"""Enrolment end to end: `badgeline agent` processes exchanging a one-time code with the
real coordinator (real Redis behind it) for a token kept in their state directory."""

from __future__ import annotations

import asyncio
import json
import stat
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from badgeline.agent.config import TOKEN_FILE_NAME, ConfigError, load_agent_settings
from badgeline.agent.main import EXIT_ENROLMENT_REFUSED
from badgeline.emulator import PrinterEmulator
from tests.agent.agent_process import AgentProcess, emulator_table, write_agent_toml
from tests.agent.conftest import Kiosk, LiveCoordinator
from tests.conftest import OPERATOR_TOKEN, auth
from tests.helpers import wait_for

PRINTER = "printer-a"
PRINTER_TABLE = {"kind": "emulator", "host": "127.0.0.1", "port": 9100}


async def issue_code(coordinator: LiveCoordinator, printer_id: str) -> str:
    async with (
        aiohttp.ClientSession() as session,
        session.post(coordinator.url + "/v1/enrolment-codes", json={"printer_id": printer_id},
                     headers=auth(OPERATOR_TOKEN)) as response,
    ):  # fmt: skip
        answer = await response.json()
        assert response.status == 201, answer
        return str(answer["code"])


def enrolling_config(tmp_path: Path, emulator: PrinterEmulator, url: str, code: str) -> Path:
    return write_agent_toml(
        tmp_path / "agent.toml", emulator_table(emulator), printer_id=PRINTER,
        agent_id="pi-in-hall-b", coordinator_url=url, enrolment_code=code,
        state_dir=tmp_path / "state", status_port=0, mdns=False, heartbeat_interval_s=0.2,
        probe_interval_s=0.2, lease_wait_s=2.0, retry_initial_s=0.05, retry_max_s=0.5,
    )  # fmt: skip


async def printed(kiosk: Kiosk, badge_ref: str, agent: AgentProcess) -> bool:
    job_id = await kiosk.submit(badge_ref, PRINTER)

    async def done() -> bool:
        assert agent.process is not None and agent.process.returncode is None, agent.tail()
        return await kiosk.state(job_id) == "printed"

    return bool(await wait_for(done, timeout_s=30))


async def test_an_agent_enrols_once_and_its_restart_uses_the_stored_token(
    coordinator: LiveCoordinator, kiosk: Kiosk, start_emulator: Any, badge_ref: str,
    tmp_path: Path,
) -> None:  # fmt: skip
    # GIVEN an agent config with a fresh one-time code and no token (what provisioning writes)
    emulator: PrinterEmulator = await start_emulator()
    code = await issue_code(coordinator, PRINTER)
    config = enrolling_config(tmp_path, emulator, coordinator.url, code)
    token_file = tmp_path / "state" / TOKEN_FILE_NAME
    # WHEN the agent starts
    agent = await AgentProcess(config).start()
    try:
        # THEN it prints with the token it was issued, kept 0600 in its state directory
        assert await printed(kiosk, badge_ref, agent)
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        stored = json.loads(token_file.read_text())
        assert stored["printer_id"] == PRINTER and len(stored["agent_token"]) >= 32
        assert code not in token_file.read_text()  # the code's digest only
        assert [e.get("event") for e in agent.events()].count("agent_enrolled") == 1
        assert code not in agent.log.read_text()  # neither the code ...
        assert stored["agent_token"] not in agent.log.read_text()  # ... nor the token is logged
        assert await agent.terminate() == 0, agent.tail()

        # WHEN it restarts with the same config (the code is spent now)
        agent = await AgentProcess(config).start()
        # THEN it does not enrol again: it loads the stored token and prints with it
        assert await printed(kiosk, badge_ref, agent)
        events = [e.get("event") for e in agent.events()]
        assert "enrolment_token_loaded" in events and "agent_enrolled" not in events
        assert json.loads(token_file.read_text()) == stored
        assert await agent.terminate() == 0, agent.tail()
    finally:
        await agent.kill()
    assert [p.name for p in token_file.parent.iterdir() if p.name.startswith(".agent-token")] == []


async def test_a_refused_code_exits_with_its_own_status_and_says_what_to_do(
    coordinator: LiveCoordinator, start_emulator: Any, tmp_path: Path
) -> None:
    # GIVEN a code that was already exchanged (e.g. by the Pi whose SD card this is a copy of)
    emulator: PrinterEmulator = await start_emulator()
    code = await issue_code(coordinator, PRINTER)
    async with (
        aiohttp.ClientSession() as session,
        session.post(coordinator.url + "/v1/enrol",
                     json={"code": code, "printer_id": PRINTER, "agent_id": "other-pi"}) as used,
    ):  # fmt: skip
        assert used.status == 201
    config = enrolling_config(tmp_path, emulator, coordinator.url, code)
    # WHEN the agent starts with it
    agent = await AgentProcess(config).start()
    try:
        # THEN it exits with the status the unit does not restart on, and says what to fix
        assert agent.process is not None
        exit_status = await asyncio.wait_for(agent.process.wait(), 30)
        assert exit_status == EXIT_ENROLMENT_REFUSED, agent.tail()
    finally:
        await agent.kill()
    refused = [e for e in agent.events() if e.get("event") == "enrolment_refused"]
    assert refused and refused[0]["code"] == "enrolment_code_used"
    assert "ask the operator for a new code" in refused[0]["what_to_do"]
    assert not (tmp_path / "state" / TOKEN_FILE_NAME).exists()


def test_a_config_without_a_token_or_a_code_is_refused(tmp_path: Path) -> None:
    config = write_agent_toml(tmp_path / "agent.toml", PRINTER_TABLE,
                              printer_id=PRINTER, coordinator_url="http://127.0.0.1:8420",
                              state_dir=tmp_path / "state")  # fmt: skip
    with pytest.raises(ConfigError, match="no agent token: set enrolment_code"):
        load_agent_settings(config)
    # ... unless an earlier enrolment left its token in state_dir
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / TOKEN_FILE_NAME).write_text("{}")
    assert load_agent_settings(config).token is None


def test_a_mistyped_code_is_refused_at_start_up_without_echoing_it(tmp_path: Path) -> None:
    config = write_agent_toml(tmp_path / "agent.toml", PRINTER_TABLE,
                              printer_id=PRINTER, coordinator_url="http://127.0.0.1:8420",
                              enrolment_code="sEcReT 7Q4K", state_dir=tmp_path)  # fmt: skip
    with pytest.raises(ConfigError, match=r"enrolment_code: .*16-64") as refused:
        load_agent_settings(config)
    assert "sEcReT" not in str(refused.value)


@pytest.mark.parametrize("content", [None, "not a certificate\n"])
def test_a_missing_or_unreadable_ca_file_is_refused_at_start_up(
    tmp_path: Path, content: str | None
) -> None:
    ca_file = tmp_path / "venue-ca.pem"
    if content is not None:
        ca_file.write_text(content)
    config = write_agent_toml(tmp_path / "agent.toml", PRINTER_TABLE,
                              printer_id=PRINTER, coordinator_url="https://127.0.0.1:8420",
                              token="t", coordinator_ca_file=ca_file)  # fmt: skip
    with pytest.raises(ConfigError, match=f"coordinator_ca_file: .*{ca_file}"):
        load_agent_settings(config)
