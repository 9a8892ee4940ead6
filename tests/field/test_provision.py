"""`badgeline provision` against small Bookworm- and Trixie-style images built in the test."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
import yaml

from badgeline.agent.config import load_agent_settings
from badgeline.provision import (
    AgentConfig,
    BootSystem,
    ImageError,
    ProvisionError,
    ProvisionRequest,
    Wifi,
    detect_boot_system,
    parse_printer,
    provision,
)
from badgeline.provision.boot import FIRSTRUN_ARGS
from tests.field.pi_images import (
    BOOKWORM_CMDLINE,
    CONFIG_TXT,
    build_image,
    fsck,
    mtools_list,
    mtools_read,
    tool,
)
from tests.security.conftest import self_signed_certificate

REPO_ROOT = Path(__file__).resolve().parents[2]
FILES = REPO_ROOT / "badgeline" / "provision" / "files"

IMAGER_FIRSTRUN = """#!/bin/bash

set +e

CURRENT_HOSTNAME=`cat /etc/hostname | tr -d " \\t\\n\\r"`
/usr/lib/raspberrypi-sys-mods/imager_custom set_hostname badge-pi
rm -f /boot/firstrun.sh
sed -i 's| systemd.run.*||g' /boot/cmdline.txt
exit 0
"""

IMAGER_USER_DATA = """#cloud-config
hostname: badge-pi
manage_etc_hosts: true
users:
- name: tech
  groups: users,adm,dialout,audio,netdev,video,plugdev,cdrom,games,input,gpio,spi,i2c,render,sudo
  shell: /bin/bash
  lock_passwd: true
runcmd:
- [rfkill, unblock, wifi]
"""


@pytest.fixture
def wheel(tmp_path: Path) -> Path:
    """Stands in for the real wheel: provisioning copies it byte for byte."""
    path = tmp_path / "badgeline-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("badgeline/__init__.py", '__version__ = "0.1.0"\n' * 5000)
    return path


def request(image: Path, wheel: Path, **overrides: object) -> ProvisionRequest:
    agent = AgentConfig(
        printer_id="printer-02",
        printer=parse_printer("usb:04b8:0e28"),
        coordinator_url="http://10.20.0.5:8420",
        token="agent-token-for-printer-02",
    )
    fields: dict[str, object] = {"image": image, "agent": agent, "wheels": [wheel]}
    fields.update(overrides)
    return ProvisionRequest(**fields)  # type: ignore[arg-type]


def quiet(_: str) -> None:
    """Progress lines are checked in the CLI test; elsewhere they are noise."""


def bookworm(tmp_path: Path, **extra: str) -> Path:
    files = {"cmdline.txt": BOOKWORM_CMDLINE, "config.txt": CONFIG_TXT, **extra}
    return build_image(tmp_path / "bookworm.img", files)


def trixie(tmp_path: Path, **extra: str) -> Path:
    files = {
        "cmdline.txt": BOOKWORM_CMDLINE,
        "config.txt": CONFIG_TXT,
        "user-data": IMAGER_USER_DATA,
        "meta-data": "instance-id: rpi-image\n",
        "network-config": "network:\n  version: 2\n",
        "issue.txt": "Raspberry Pi reference 2025-10-01\n",
        **extra,
    }
    return build_image(tmp_path / "trixie.img", files)


def test_a_bookworm_image_gets_config_installer_and_a_firstrun_hook(
    tmp_path: Path, wheel: Path
) -> None:
    # GIVEN a Bookworm image nobody customised (no firstrun.sh yet)
    image = bookworm(tmp_path)
    # WHEN it is provisioned
    result = provision(request(image, wheel), progress=quiet)
    # THEN it was recognised as a firstrun image
    assert result.boot_system is BootSystem.FIRSTRUN
    # AND cmdline.txt keeps every original argument, in order, plus Imager's three once
    cmdline = mtools_read(image, "cmdline.txt").decode()
    assert cmdline == BOOKWORM_CMDLINE.strip() + " " + " ".join(FIRSTRUN_ARGS) + "\n"
    # AND firstrun.sh enables the installer unit and removes itself afterwards
    firstrun = mtools_read(image, "firstrun.sh").decode()
    assert firstrun.startswith("#!/bin/bash\n")
    assert "systemctl enable badgeline-install.service" in firstrun
    assert firstrun.rstrip().endswith("exit 0")
    # AND the installer's files are byte-identical to the checkout's
    for name in [
        "install-agent.sh",
        "badgeline-install.service",
        "99-badgeline-printers.rules",
        "badgeline-agent.service",
    ]:
        assert mtools_read(image, f"badgeline/{name}") == (FILES / name).read_bytes()
    assert mtools_read(image, f"badgeline/wheels/{wheel.name}") == wheel.read_bytes()
    # AND config.txt is untouched, and the file system is clean by fsck.fat
    assert mtools_read(image, "config.txt").decode() == CONFIG_TXT
    fsck(image)


def test_the_agent_config_loads_with_the_agents_own_settings(tmp_path: Path, wheel: Path) -> None:
    # GIVEN a provisioned image
    image = bookworm(tmp_path)
    provision(request(image, wheel), progress=quiet)
    # WHEN the agent reads /etc/badgeline/agent.toml (installed from badgeline/agent.toml)
    config_file = tmp_path / "agent.toml"
    config_file.write_bytes(mtools_read(image, "badgeline/agent.toml"))
    settings = load_agent_settings(config_file)
    # THEN it gets the printer, the coordinator, its token and the unit's state directory
    assert settings.printer_id == "printer-02"
    assert settings.coordinator_url == "http://10.20.0.5:8420"
    assert settings.token.get_secret_value() == "agent-token-for-printer-02"
    assert str(settings.state_dir) == "/var/lib/badgeline-agent"
    assert settings.printer.kind == "usb"
    assert (settings.printer.vendor_id, settings.printer.product_id) == (0x04B8, 0x0E28)


def test_mdns_and_enrolment_code_are_written_instead_of_url_and_token(
    tmp_path: Path, wheel: Path
) -> None:
    # GIVEN a tech who relies on mDNS and has a one-time enrolment code
    image = bookworm(tmp_path)
    agent = AgentConfig(
        printer_id="printer-07",
        printer=parse_printer("device:/dev/usb/lp0"),
        enrolment_code="Q7xK-2pLm_9vRt4WzYb8nC3d",
        venue="hall-b",
    )
    # WHEN provisioned
    provision(request(image, wheel, agent=agent), progress=quiet)
    # THEN the config has no URL and no token, and carries the code and venue
    config = tomllib.loads(mtools_read(image, "badgeline/agent.toml").decode())
    assert config == {
        "printer_id": "printer-07",
        "venue": "hall-b",
        "enrolment_code": "Q7xK-2pLm_9vRt4WzYb8nC3d",
        "state_dir": "/var/lib/badgeline-agent",
        "status_port": 8421,
        "printer": {"kind": "device", "path": "/dev/usb/lp0"},
    }


def test_a_coordinator_certificate_lands_beside_the_config_that_names_it(
    tmp_path: Path, wheel: Path
) -> None:
    # GIVEN a coordinator serving HTTPS with a self-signed certificate
    certificate = self_signed_certificate(tmp_path / "tls")
    image = bookworm(tmp_path)
    agent = AgentConfig(
        printer_id="printer-07", printer=parse_printer("device:/dev/usb/lp0"),
        coordinator_url="https://10.20.0.5:8420", token="t",
        coordinator_ca_file="/etc/badgeline/coordinator-ca.pem",
    )  # fmt: skip
    # WHEN provisioned with it
    provision(request(image, wheel, agent=agent, coordinator_ca=certificate.cert_file),
              progress=quiet)  # fmt: skip
    # THEN install-agent.sh finds it beside agent.toml, which names where it installs it
    pem = mtools_read(image, "badgeline/coordinator-ca.pem")
    assert pem == certificate.cert_file.read_bytes()
    config = tomllib.loads(mtools_read(image, "badgeline/agent.toml").decode())
    assert config["coordinator_ca_file"] == "/etc/badgeline/coordinator-ca.pem"
    installer = (FILES / "install-agent.sh").read_text()
    assert '"$FROM/coordinator-ca.pem" /etc/badgeline/coordinator-ca.pem' in installer
    # AND a file that is not a certificate is refused before anything is written
    with pytest.raises(ProvisionError, match="not a PEM certificate"):
        provision(request(image, wheel, coordinator_ca=wheel), progress=quiet)


def test_a_mistyped_enrolment_code_is_refused_when_provisioning() -> None:
    with pytest.raises(ValueError, match="not a code the coordinator issues"):
        AgentConfig(printer_id="printer-07", printer=parse_printer("device:/dev/usb/lp0"),
                    enrolment_code="ENR-7Q4K")  # fmt: skip


def test_provisioning_twice_changes_nothing_the_second_time(tmp_path: Path, wheel: Path) -> None:
    # GIVEN a Bookworm image provisioned once
    image = bookworm(tmp_path)
    wifi = Wifi("Venue Staff", "s3cret pass", "GB")
    provision(request(image, wheel, wifi=wifi), progress=quiet)
    first = {name: mtools_read(image, name) for name in ("cmdline.txt", "firstrun.sh")}
    listing = mtools_list(image, "/badgeline")
    # WHEN it is provisioned again with the same settings
    provision(request(image, wheel, wifi=wifi), progress=quiet)
    # THEN the hooks are byte-identical (no second block, no repeated arguments)
    assert {name: mtools_read(image, name) for name in first} == first
    assert mtools_read(image, "cmdline.txt").decode().count("systemd.run=") == 1
    assert mtools_list(image, "/badgeline") == listing
    fsck(image)


def test_a_newer_wheel_replaces_the_old_one(tmp_path: Path, wheel: Path) -> None:
    # GIVEN an image provisioned with badgeline 0.1.0
    image = bookworm(tmp_path)
    provision(request(image, wheel), progress=quiet)
    newer = tmp_path / "badgeline-0.2.0-py3-none-any.whl"
    newer.write_bytes(b"PK-newer")
    # WHEN provisioned again with 0.2.0
    provision(request(image, newer), progress=quiet)
    # THEN only 0.2.0 is there for the installer to pick
    assert mtools_list(image, "/badgeline/wheels") == [newer.name]


def test_imagers_own_firstrun_is_kept_and_ours_runs_before_it_exits(
    tmp_path: Path, wheel: Path
) -> None:
    # GIVEN a Bookworm image Raspberry Pi Imager customised (its firstrun.sh, its arguments)
    image = bookworm(tmp_path)
    image.unlink()
    imager_cmdline = BOOKWORM_CMDLINE.strip() + " " + " ".join(FIRSTRUN_ARGS) + "\n"
    image = build_image(
        tmp_path / "imager.img",
        {"cmdline.txt": imager_cmdline, "config.txt": CONFIG_TXT, "firstrun.sh": IMAGER_FIRSTRUN},
    )
    # WHEN provisioned
    provision(request(image, wheel), progress=quiet)
    # THEN Imager's lines all survive, ours come after its preamble, before any exit
    firstrun = mtools_read(image, "firstrun.sh").decode()
    kept = [line for line in IMAGER_FIRSTRUN.splitlines() if line.strip()]
    assert [line for line in firstrun.splitlines() if line in kept] == kept
    ours = firstrun.index("systemctl enable badgeline-install.service")
    assert firstrun.index("set +e") < ours < firstrun.index("CURRENT_HOSTNAME")
    # AND the arguments Imager already added are still there exactly once
    assert mtools_read(image, "cmdline.txt").decode() == imager_cmdline


def test_the_generated_firstrun_passes_shellcheck(tmp_path: Path, wheel: Path) -> None:
    # GIVEN a firstrun.sh with Wi-Fi whose name and password need quoting
    image = bookworm(tmp_path)
    wifi = Wifi("Hall B 'Staff'", 'pa$$ "word"', "DE")
    provision(request(image, wheel, wifi=wifi), progress=quiet)
    script = tmp_path / "firstrun.sh"
    script.write_bytes(mtools_read(image, "firstrun.sh"))
    # WHEN shellcheck reads it THEN it finds nothing
    result = subprocess.run(
        [tool("shellcheck", "shellcheck"), str(script)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout
    # AND bash reads the Wi-Fi values back unchanged
    text = script.read_text()
    assert "nmcli --offline connection add type wifi" in text
    assert "do_wifi_country DE" in text
    quoted_ssid = text.split(" ssid ", 1)[1].split(" wifi-sec.key-mgmt")[0]
    echoed = subprocess.run(
        ["bash", "-c", f"printf '%s\\n' {quoted_ssid}"], capture_output=True, text=True, check=True
    )
    assert echoed.stdout == "Hall B 'Staff'\n"


def test_install_agent_sh_passes_shellcheck() -> None:
    script = FILES / "install-agent.sh"
    result = subprocess.run(
        [tool("shellcheck", "shellcheck"), str(script)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout


def test_a_trixie_image_gets_a_cloud_init_runcmd_and_wifi(tmp_path: Path, wheel: Path) -> None:
    # GIVEN a Trixie image whose user-data Imager wrote (host name, user, a runcmd of its own)
    image = trixie(tmp_path)
    wifi = Wifi("Venue Staff", 'p"ss: word', "GB")
    # WHEN provisioned with Wi-Fi
    result = provision(request(image, wheel, wifi=wifi), progress=quiet)
    # THEN cloud-init is used, and cmdline.txt is left alone
    assert result.boot_system is BootSystem.CLOUD_INIT
    assert mtools_read(image, "cmdline.txt").decode() == BOOKWORM_CMDLINE
    assert "firstrun.sh" not in mtools_list(image)
    # AND user-data is still valid YAML with Imager's settings and both runcmd entries
    user_data = mtools_read(image, "user-data").decode()
    assert user_data.startswith("#cloud-config\n")
    parsed = yaml.safe_load(user_data)
    assert parsed["hostname"] == "badge-pi"
    assert parsed["users"][0]["name"] == "tech"
    assert ["rfkill", "unblock", "wifi"] in parsed["runcmd"]
    assert ["systemctl", "enable", "--now", "--no-block", "badgeline-install.service"] in parsed[
        "runcmd"
    ]
    # AND network-config joins the venue Wi-Fi with the password intact
    network = yaml.safe_load(mtools_read(image, "network-config").decode())["network"]
    access_point = network["wifis"]["wlan0"]["access-points"]["Venue Staff"]
    assert access_point == {"password": 'p"ss: word'}
    assert network["wifis"]["wlan0"]["regulatory-domain"] == "GB"
    fsck(image)


def test_provisioning_a_trixie_image_twice_is_idempotent(tmp_path: Path, wheel: Path) -> None:
    image = trixie(tmp_path)
    provision(request(image, wheel), progress=quiet)
    first = mtools_read(image, "user-data")
    provision(request(image, wheel), progress=quiet)
    assert mtools_read(image, "user-data") == first
    assert first.decode().count("badgeline-install.service]") == 2  # install + enable, once each


def test_inline_runcmd_is_refused_rather_than_rewritten(tmp_path: Path, wheel: Path) -> None:
    # GIVEN user-data whose runcmd is a flow list we cannot safely extend
    image = trixie(tmp_path, **{"user-data": "#cloud-config\nruncmd: [[ls]]\n"})
    # WHEN/THEN provisioning stops with a message, having left user-data alone
    with pytest.raises(ProvisionError, match="inline"):
        provision(request(image, wheel), progress=quiet)
    assert mtools_read(image, "user-data").decode() == "#cloud-config\nruncmd: [[ls]]\n"


@pytest.mark.parametrize(
    ("files", "issue", "expected"),
    [
        (["cmdline.txt", "config.txt"], "Raspberry Pi reference 2024-11-19\n", BootSystem.FIRSTRUN),
        (
            ["cmdline.txt", "config.txt"],
            "Raspberry Pi reference 2025-10-01\n",
            BootSystem.CLOUD_INIT,
        ),
        (["cmdline.txt", "user-data"], None, BootSystem.CLOUD_INIT),
        (["CMDLINE.TXT"], None, BootSystem.FIRSTRUN),
    ],
)
def test_the_first_boot_system_is_detected(
    files: list[str], issue: str | None, expected: BootSystem
) -> None:
    assert detect_boot_system(files, issue) is expected


def test_a_file_that_is_not_an_image_is_refused(tmp_path: Path, wheel: Path) -> None:
    # GIVEN a compressed download someone forgot to unpack
    image = tmp_path / "raspios.img.xz"
    image.write_bytes(b"\xfd7zXZ\x00" + b"\x00" * 4096)
    # WHEN/THEN provisioning says what is wrong
    with pytest.raises(ImageError, match="unpack"):
        provision(request(image, wheel), progress=quiet)


def test_the_cli_shows_progress_and_writes_the_image(tmp_path: Path, wheel: Path) -> None:
    # GIVEN a Bookworm image and the real `badgeline` command
    image = bookworm(tmp_path)
    # WHEN a tech runs badgeline provision
    result = subprocess.run(
        [sys.executable, "-m", "badgeline.cli", "provision", str(image),
         "--printer-id", "printer-03", "--printer", "network:10.0.0.21:9100",
         "--enrolment-code", "AAAAbbbbCCCCdddd_EEEE-ffff", "--wheel", str(wheel),
         "--wifi-ssid", "Staff", "--wifi-password", "staff-pass", "--wifi-country", "gb"],
        capture_output=True, text=True, timeout=120, cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )  # fmt: skip
    # THEN it reports each file as it writes it, and succeeds
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[1] == "first boot runs firstrun"
    assert any(line.startswith(f"writing /badgeline/wheels/{wheel.name} (") for line in lines)
    assert lines[-1].startswith("done: ")
    config = tomllib.loads(mtools_read(image, "badgeline/agent.toml").decode())
    assert config["printer"] == {"kind": "network", "host": "10.0.0.21", "port": 9100}
    assert "do_wifi_country GB" in mtools_read(image, "firstrun.sh").decode()


def test_the_cli_refuses_wifi_without_a_country(tmp_path: Path, wheel: Path) -> None:
    image = bookworm(tmp_path)
    result = subprocess.run(
        [sys.executable, "-m", "badgeline.cli", "provision", str(image),
         "--printer-id", "printer-03", "--token", "t", "--wheel", str(wheel),
         "--wifi-ssid", "Staff", "--wifi-password", "pw"],
        capture_output=True, text=True, timeout=120, cwd=REPO_ROOT,
    )  # fmt: skip
    assert result.returncode == 2
    assert "--wifi-country" in result.stderr


def test_a_truncated_image_is_refused(tmp_path: Path, wheel: Path) -> None:
    # GIVEN an image whose download stopped halfway through the boot partition
    image = bookworm(tmp_path)
    with image.open("r+b") as file:
        file.truncate(8 * 2**20)
    # WHEN/THEN provisioning refuses instead of writing past the end
    with pytest.raises(ImageError, match="truncated"):
        provision(request(image, wheel), progress=quiet)


def test_a_missing_image_is_named_without_a_traceback(tmp_path: Path, wheel: Path) -> None:
    # GIVEN a tech who mistyped the image's name
    result = subprocess.run(
        [sys.executable, "-m", "badgeline.cli", "provision", str(tmp_path / "printer-02.im"),
         "--printer-id", "printer-02", "--token", "t", "--wheel", str(wheel)],
        capture_output=True, text=True, timeout=120, cwd=REPO_ROOT,
    )  # fmt: skip
    # THEN one line says which file, and the exit status is the usage error's
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == (
        f"provision: cannot read {tmp_path / 'printer-02.im'}: No such file or directory"
    )


@pytest.mark.parametrize(
    ("printer", "url", "key"),
    [
        ("device:/dev/usb/lp0", "10.20.0.5:8420", "coordinator_url"),
        ("network:10.0.0.21:99999", "http://10.20.0.5:8420", "printer.network.port"),
    ],
)
def test_a_config_the_agent_would_refuse_is_refused_before_the_image_is_touched(
    tmp_path: Path, wheel: Path, printer: str, url: str, key: str
) -> None:
    # GIVEN a typo the agent on the Pi would stop on (exit 2) at its first start
    image = bookworm(tmp_path)
    before = image.read_bytes()
    agent = AgentConfig(
        printer_id="printer-07", printer=parse_printer(printer), coordinator_url=url, token="t"
    )
    # WHEN/THEN provisioning names the key now, and writes nothing
    with pytest.raises(ProvisionError, match=key.replace(".", r"\.")):
        provision(request(image, wheel, agent=agent), progress=quiet)
    assert image.read_bytes() == before


def test_the_cli_refuses_a_wifi_password_the_pi_would_refuse(tmp_path: Path, wheel: Path) -> None:
    # GIVEN a password too short for WPA (nmcli and netplan on the Pi refuse it at first boot)
    image = bookworm(tmp_path)
    result = subprocess.run(
        [sys.executable, "-m", "badgeline.cli", "provision", str(image),
         "--printer-id", "printer-03", "--token", "t", "--wheel", str(wheel),
         "--wifi-ssid", "Staff", "--wifi-password", "pw", "--wifi-country", "GB"],
        capture_output=True, text=True, timeout=120, cwd=REPO_ROOT,
    )  # fmt: skip
    # THEN provisioning says so now, not a Pi that never joins the Wi-Fi
    assert result.returncode == 2
    assert "--wifi-password" in result.stderr and "8 to 63" in result.stderr
