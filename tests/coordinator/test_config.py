"""Coordinator settings: a TOML file under BADGELINE_* variables under arguments,
validated once, with errors that name the key to fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from badgeline.coordinator.config import ConfigError, load_coordinator_settings


def _toml(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "coordinator.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_arguments_beat_the_environment_which_beats_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _toml(tmp_path, 'venue = "hall-a"\nhigh_water_mark = 50\nlisten_port = 9000\n')
    monkeypatch.setenv("BADGELINE_HIGH_WATER_MARK", "70")
    monkeypatch.setenv("badgeline_listen_port", "9100")  # any case
    settings = load_coordinator_settings(path, listen_port=9200)
    assert (settings.venue, settings.high_water_mark, settings.listen_port) == ("hall-a", 70, 9200)
    assert settings.state_dir == Path("var/coordinator")  # a default, as a Path
    # the audit export goes in the state directory unless told otherwise
    assert settings.audit_directory == Path("var/coordinator/audit")
    assert settings.job_retention_s == 7 * 24 * 3600


def test_lists_and_tables_come_from_the_environment_as_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _toml(tmp_path, '[pools]\nhall-a = ["printer-a"]\n')
    monkeypatch.setenv("BADGELINE_POOLS", '{"hall-b": ["printer-b", "printer-c"]}')
    monkeypatch.setenv("BADGELINE_MDNS_INTERFACES", '["127.0.0.1"]')
    settings = load_coordinator_settings(path)
    assert settings.pools == {"hall-a": ["printer-a"], "hall-b": ["printer-b", "printer-c"]}
    assert settings.mdns_interfaces == ["127.0.0.1"]
    monkeypatch.setenv("BADGELINE_POOLS", "hall-b=printer-b")
    with pytest.raises(ConfigError, match=r"BADGELINE_POOLS.*JSON"):
        load_coordinator_settings(path)


SAME_HASH_TWICE = "".join(
    f'[[tokens]]\nname = "{role}"\nrole = "{role}"\nsha256 = "{"ab" * 32}"\n'
    for role in ("kiosk", "operator")
)
# Two tokens of one kiosk name (a spare tablet) put in two groups.
ONE_KIOSK_TWO_GROUPS = "".join(
    f'[[tokens]]\nname = "desk-1"\nrole = "kiosk"\nsha256 = "{digit * 64}"\ngroup = "{group}"\n'
    for digit, group in (("1", "hall-a"), ("2", "hall-b"))
)
OPERATOR_IN_A_GROUP = (
    f'[[tokens]]\nname = "ops"\nrole = "operator"\nsha256 = "{"3" * 64}"\ngroup = "hall-a"\n'
)
KIOSK_GROUP_NOT_A_NAME = (
    f'[[tokens]]\nname = "desk-1"\nrole = "kiosk"\nsha256 = "{"4" * 64}"\ngroup = "Hall A"\n'
)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("hihg_water_mark = 5\n", "hihg_water_mark"),  # a typo is not silently ignored
        ("high_water_mark = 0\n", "high_water_mark"),
        ('embedded_appendfsync = "sometimes"\n', "embedded_appendfsync"),
        ('venue = "hall-a"\nvenue = "hall-b"\n', "not valid TOML"),
        # a pool member or name that no job could ever be routed to
        ('[pools]\nhall-a = ["printer_a1"]\n', r"pools\.hall-a\.0"),
        ('[pools]\n"Hall A" = ["printer-a1"]\n', r"pools\.Hall A"),
        ('redis_url = "localhost:6379"\n', "redis_url: .*redis://"),
        # a kiosk entry copied for an operator without a new hash
        (SAME_HASH_TWICE, "tokens 'kiosk' and 'operator' have the same sha256"),
        ('mdns_interfaces = ["eth0"]\n', "mdns_interfaces: .*'eth0' is not an IPv4 address"),
        # kiosk groups: one group per kiosk name, kiosks only, a name like a pool's
        (ONE_KIOSK_TWO_GROUPS, "kiosk tokens named 'desk-1' are in different groups"),
        (OPERATOR_IN_A_GROUP, "only kiosk tokens take group"),
        (KIOSK_GROUP_NOT_A_NAME, r"tokens\.0\.group: String should match pattern"),
        # retention: a job must stay some time, and not past a year
        ("job_retention_s = 0\n", "job_retention_s"),
        ("job_retention_s = 40000000\n", "job_retention_s"),
        ("audit_file_max_bytes = 100\n", "audit_file_max_bytes"),
    ],
)
def test_a_bad_file_stops_start_up_naming_what_to_fix(
    tmp_path: Path, text: str, named: str
) -> None:
    with pytest.raises(ConfigError, match=named):
        load_coordinator_settings(_toml(tmp_path, text))


def test_a_bad_value_from_the_environment_names_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a file without the key, and the environment setting it wrong
    path = _toml(tmp_path, 'venue = "hall-a"\n')
    monkeypatch.setenv("BADGELINE_HIGH_WATER_MARK", "lots")
    # THEN the error points at the variable, not only at a file that lacks the key
    with pytest.raises(ConfigError, match=r"in .*coordinator\.toml, BADGELINE_HIGH_WATER_MARK:"):
        load_coordinator_settings(path)


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_coordinator_settings(tmp_path / "nowhere.toml")


def test_a_top_level_key_written_under_a_table_header_is_explained(tmp_path: Path) -> None:
    # TOML's trap: listen_port after [[tokens]] belongs to that token entry
    text = ('[[tokens]]\nname = "ops"\nrole = "operator"\nsha256 = "' + "0" * 64 + '"\n'
            "listen_port = 9000\nbogus = 1\n")  # fmt: skip
    with pytest.raises(ConfigError) as refused:
        load_coordinator_settings(_toml(tmp_path, text))
    message = str(refused.value)
    assert (
        "tokens.0.listen_port: Extra inputs are not permitted\n    (listen_port is a "
        "top-level setting: in TOML it must come before the first [[tokens]] header" in message
    )
    assert "tokens.0.bogus: Extra inputs are not permitted" in message  # not a setting: no hint
    assert "(bogus" not in message
