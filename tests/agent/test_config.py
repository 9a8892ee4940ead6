"""Agent settings: TOML, then BADGELINE_AGENT_* overrides, errors that name the key."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from badgeline.agent.config import ConfigError, load_agent_settings
from badgeline.agent.printers import EmulatorConnection, NetworkConnection
from badgeline.agent.service import Agent

MINIMAL = """
printer_id = "printer-a"
coordinator_url = "http://venue:8420/"
token = "secret-agent-token"
state_dir = "/var/lib/badgeline"

[printer]
kind = "network"
host = "10.0.0.21"
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "agent.toml"
    path.write_text(text)
    return path


def test_a_minimal_file_gets_the_documented_defaults(tmp_path: Path) -> None:
    settings = load_agent_settings(write(tmp_path, MINIMAL))
    assert settings.printer == NetworkConnection(host="10.0.0.21")
    assert settings.coordinator_url == "http://venue:8420"
    assert settings.effective_width_dots == 576 and settings.footer is True
    assert (settings.lease_wait_s, settings.prefetch, settings.heartbeat_interval_s) == (20, 2, 1)
    assert settings.journal_path == Path("/var/lib/badgeline/journal.sqlite3")
    assert settings.agent_id  # the host name
    # The token is a secret: it does not show in a repr or a log line.
    assert "secret-agent-token" not in repr(settings)
    assert settings.token.get_secret_value() == "secret-agent-token"


def test_environment_overrides_the_file_including_nested_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BADGELINE_AGENT_PREFETCH", "3")
    monkeypatch.setenv("BADGELINE_AGENT_LABELS", '["hall-a"]')
    monkeypatch.setenv("BADGELINE_AGENT_PRINTER", '{"port": 9101}')
    settings = load_agent_settings(write(tmp_path, MINIMAL))
    assert settings.prefetch == 3 and settings.labels == ["hall-a"]
    assert isinstance(settings.printer, NetworkConnection) and settings.printer.port == 9101


def test_environment_sets_one_printer_key_in_any_case_and_refuses_bad_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BADGELINE_AGENT_PRINTER__HOST", "10.0.0.99")
    monkeypatch.setenv("badgeline_agent_footer", "false")
    monkeypatch.setenv("BADGELINE_AGENT_NO_SUCH_OPTION", "ignored, as before")
    settings = load_agent_settings(write(tmp_path, MINIMAL))
    assert settings.printer == NetworkConnection(host="10.0.0.99") and settings.footer is False
    monkeypatch.setenv("BADGELINE_AGENT_LABELS", "hall-a")
    with pytest.raises(ConfigError, match=r"BADGELINE_AGENT_LABELS.*JSON"):
        load_agent_settings(write(tmp_path, MINIMAL))


def test_a_file_that_is_not_toml_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_agent_settings(write(tmp_path, "printer_id = \n" + MINIMAL))


@pytest.mark.parametrize(
    ("line", "key"),
    [
        ("prefetch = 0", "prefetch"),
        ('printer_id = "Printer A"', "printer_id"),
        ('labels = ["Hall A"]', "labels"),
        ("lease_wait_s = -1", "lease_wait_s"),
        ('coordinator_url = "venue:8420"', "coordinator_url"),
        ("surprise = 1", "surprise"),
    ],
)
def test_a_bad_value_stops_loading_and_names_its_key(tmp_path: Path, line: str, key: str) -> None:
    body = "\n".join(
        existing for existing in MINIMAL.splitlines()
        if existing.split(" = ")[0] != line.split(" = ")[0]
    )  # fmt: skip
    text = line + "\n" + body
    with pytest.raises(ConfigError) as raised:
        load_agent_settings(write(tmp_path, text))
    assert f"  {key}" in str(raised.value)


def test_a_bad_printer_table_names_the_printer_key(tmp_path: Path) -> None:
    text = MINIMAL.replace('kind = "network"', 'kind = "carrier-pigeon"')
    with pytest.raises(ConfigError, match="printer"):
        load_agent_settings(write(tmp_path, text))


def test_width_comes_from_an_escpos_profile(tmp_path: Path) -> None:
    settings = load_agent_settings(write(tmp_path, 'escpos_profile = "POS-5890"\n' + MINIMAL))
    assert settings.effective_width_dots == 384


@pytest.mark.parametrize(
    ("lines", "problem"),
    [
        ('escpos_profile = "no-such-printer"', "not a python-escpos profile"),
        ('escpos_profile = "TM-T88V"\nwidth_dots = 384', "not both"),
    ],
)
def test_width_settings_that_cannot_be_used_are_refused(
    tmp_path: Path, lines: str, problem: str
) -> None:
    with pytest.raises(ConfigError, match=problem):
        load_agent_settings(write(tmp_path, lines + "\n" + MINIMAL))


def test_the_demo_venue_config_shape_loads(tmp_path: Path) -> None:
    # What badgeline.localvenue writes for each agent.
    text = (
        'printer_id = "printer-b"\ncoordinator_url = "http://127.0.0.1:8420"\ntoken = "t"\n'
        'state_dir = "agents/printer-b"\nstatus_port = 9300\n'
        '[printer]\nkind = "emulator"\nhost = "127.0.0.1"\nport = 9101\n'
    )
    settings = load_agent_settings(write(tmp_path, text))
    assert settings.printer == EmulatorConnection(host="127.0.0.1", port=9101)


def test_a_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_agent_settings(tmp_path / "nope.toml")


def test_without_a_coordinator_url_the_agent_looks_for_it_by_mdns(tmp_path: Path) -> None:
    text = "\n".join(line for line in MINIMAL.splitlines() if "coordinator_url" not in line)
    settings = load_agent_settings(write(tmp_path, 'venue = "hall-a"\n' + text))
    assert settings.coordinator_url is None and settings.mdns and settings.venue == "hall-a"
    assert Agent(settings).settings is settings  # no URL is not an error any more


def test_no_coordinator_url_and_no_mdns_says_how_to_set_one(tmp_path: Path) -> None:
    text = "\n".join(line for line in MINIMAL.splitlines() if "coordinator_url" not in line)
    with pytest.raises(ConfigError, match="BADGELINE_AGENT_COORDINATOR_URL"):
        load_agent_settings(write(tmp_path, "mdns = false\n" + text))


def test_the_status_and_mdns_defaults(tmp_path: Path) -> None:
    settings = load_agent_settings(write(tmp_path, MINIMAL))
    assert (settings.status_host, settings.status_port) == ("127.0.0.1", 8421)
    assert settings.mdns is True and settings.mdns_interfaces is None
    assert settings.venue is None and settings.enrolment_code is None


def test_a_provisioned_config_with_a_code_and_no_token_loads(tmp_path: Path) -> None:
    # What `badgeline provision --enrolment-code … --venue …` writes: the agent
    # exchanges the code for its token at start-up (tests/agent/test_enrolment.py).
    text = "\n".join(line for line in MINIMAL.splitlines() if not line.startswith("token"))
    code_line = 'enrolment_code = "Q7xK-2pLm_9vRt4WzYb8nC3d"'
    text = text.replace('coordinator_url = "http://venue:8420/"', f'venue = "hall-a"\n{code_line}')
    settings = load_agent_settings(write(tmp_path, text))
    assert settings.token is None and settings.enrolment_code is not None
    assert settings.enrolment_code.get_secret_value() == "Q7xK-2pLm_9vRt4WzYb8nC3d"
    assert "Q7xK" not in repr(settings)  # a secret, like the token


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('mdns_interfaces = ["eth0"]', "not an IPv4 address"),
        ("mdns_interfaces = []", "at least one address"),
        ('venue = "Hall A"', "venue"),
        ("status_port = 70000", "status_port"),
    ],
)
def test_bad_mdns_and_status_settings_are_refused(tmp_path: Path, line: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        load_agent_settings(write(tmp_path, line + "\n" + MINIMAL))


def _agent_doc_blocks() -> list[str]:
    text = (Path(__file__).parents[2] / "docs" / "config.md").read_text()
    agent_section = text.split("\n## Agent", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```toml\n(.*?)```", agent_section, flags=re.S)


def test_the_documented_agent_examples_load(tmp_path: Path) -> None:
    # Every [printer] snippet in docs/config.md with the minimal keys, and every full example.
    blocks = _agent_doc_blocks()
    assert len(blocks) == 12  # 7 ESC/POS and general, 5 label printers
    head = MINIMAL.split("[printer]")[0]
    for block in blocks:
        text = block.replace('"…"', '"t"')
        text = text if "printer_id" in text else head + text
        settings = load_agent_settings(write(tmp_path, text))
        assert settings.printer.kind in ("network", "usb", "device", "emulator")
