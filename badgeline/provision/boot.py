"""How a Raspberry Pi OS image configures itself on first boot, and our edits to it.

Images from October 2025 on (Trixie) run cloud-init from `user-data` and
`network-config` on the boot partition; Bookworm images run a `firstrun.sh`
named by `systemd.run=` in `cmdline.txt` (what Raspberry Pi Imager writes).
Either way we add as little as possible to what is there (Imager may have
set a host name, a user and SSH keys) and fence our part with markers, so
provisioning the same image twice replaces our part instead of adding it again.

These are pure functions on file contents; `provision.py` reads and writes.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from enum import Enum

BEGIN = "# >>> badgeline: written by `badgeline provision`, replaced when run again"
END = "# <<< badgeline"
BOOT_DIR_ON_PI = "/boot/firmware/badgeline"
INSTALL_UNIT = "badgeline-install.service"
# What Raspberry Pi Imager appends for its firstrun.sh; the script removes them after it ran.
FIRSTRUN_ARGS = (
    "systemd.run=/boot/firstrun.sh",
    "systemd.run_success_action=reboot",
    "systemd.unit=kernel-command-line.target",
)
CLOUD_INIT_FILES = {"user-data", "network-config", "meta-data"}
TRIXIE_FROM = "2025-10-01"


class ProvisionError(Exception):
    """The image's first-boot files are not in a shape we can safely edit."""


class BootSystem(Enum):
    CLOUD_INIT = "cloud-init"  # Trixie and later
    FIRSTRUN = "firstrun"  # Bookworm (Raspberry Pi Imager's firstrun.sh)


@dataclass(frozen=True)
class Wifi:
    ssid: str
    password: str
    country: str  # ISO 3166 alpha-2: Pi OS keeps Wi-Fi blocked until it is set


def detect_boot_system(file_names: list[str], issue_txt: str | None) -> BootSystem:
    """Trixie if cloud-init's files are there or issue.txt dates the image October 2025+."""
    names = {name.lower() for name in file_names}
    if names & CLOUD_INIT_FILES:
        return BootSystem.CLOUD_INIT
    dates = re.findall(r"\b(\d{4}-\d{2}-\d{2})\b", issue_txt or "")
    if dates and max(dates) >= TRIXIE_FROM:
        return BootSystem.CLOUD_INIT
    if "cmdline.txt" in names:
        return BootSystem.FIRSTRUN
    raise ProvisionError("no cmdline.txt or cloud-init files: not a Raspberry Pi OS boot partition")


# ---------------------------------------------------------------- Bookworm: cmdline.txt + firstrun


def cmdline_with_firstrun(cmdline: str) -> str:
    """The original kernel arguments, in order, then Imager's firstrun arguments exactly once."""
    words = cmdline.split()
    kept = [w for w in words if not w.startswith(("systemd.run=", "systemd.run_success_action="))]
    kept = [w for w in kept if w != "systemd.unit=kernel-command-line.target"]
    return " ".join([*kept, *FIRSTRUN_ARGS]) + "\n"


def firstrun_block(wifi: Wifi | None) -> str:
    """Shell run once by firstrun.sh: enable the installer unit, set up Wi-Fi."""
    lines = [
        BEGIN,
        "BADGELINE_BOOT=/boot/firmware/badgeline",
        '[ -d "$BADGELINE_BOOT" ] || BADGELINE_BOOT=/boot/badgeline',
        f'install -m 0644 "$BADGELINE_BOOT/{INSTALL_UNIT}" /etc/systemd/system/{INSTALL_UNIT}',
        f"systemctl enable {INSTALL_UNIT}",
    ]
    if wifi is not None:
        lines += _nmcli_wifi(wifi)
    return "\n".join([*lines, END]) + "\n"


def _nmcli_wifi(wifi: Wifi) -> list[str]:
    ssid, psk, country = (shlex.quote(v) for v in (wifi.ssid, wifi.password, wifi.country))
    keyfile = "/etc/NetworkManager/system-connections/badgeline-wifi.nmconnection"
    # NetworkManager is not running yet at firstrun time: `nmcli --offline`
    # (NM 1.40+, Bookworm has 1.42) renders the keyfile without the daemon.
    # The country unblocks the radio, which Pi OS keeps rfkill-blocked until set.
    return [
        f"raspi-config nonint do_wifi_country {country} || iw reg set {country} || true",
        "for rfkill in /var/lib/systemd/rfkill/*:wlan; do",
        '    [ -e "$rfkill" ] && echo 0 >"$rfkill"',
        "done",
        f"nmcli --offline connection add type wifi con-name badgeline-wifi ifname wlan0 "
        f"ssid {ssid} wifi-sec.key-mgmt wpa-psk wifi-sec.psk {psk} "
        f"connection.autoconnect yes > {keyfile}",
        f"chmod 0600 {keyfile}",
    ]


def new_firstrun(block: str) -> str:
    """A firstrun.sh of our own, for an image Imager did not customise."""
    return (
        "#!/bin/bash\n"
        "# Run once on first boot via systemd.run= in cmdline.txt (see `badgeline provision`).\n"
        "set +e\n\n"
        f"{block}\n"
        'BOOT=/boot/firmware; [ -f "$BOOT/cmdline.txt" ] || BOOT=/boot\n'
        'rm -f "$BOOT/firstrun.sh"\n'
        "sed -i 's| systemd.run.*||g' \"$BOOT/cmdline.txt\"\n"
        "exit 0\n"
    )


def firstrun_with_block(existing: str | None, block: str) -> str:
    """Imager's firstrun.sh with our block after its preamble (ours replaced if present)."""
    if existing is None or not existing.strip():
        return new_firstrun(block)
    text = _without_block(existing)
    if not text.startswith("#!"):
        raise ProvisionError("firstrun.sh does not start with #!: refusing to edit it")
    lines = text.splitlines(keepends=True)
    # After the shebang, comments and a leading `set +e`, before anything that could `exit`.
    at = 1
    while at < len(lines) and _is_preamble(lines[at]):
        at += 1
    return "".join([*lines[:at], block, "\n", *lines[at:]])


def _is_preamble(line: str) -> bool:
    stripped = line.strip()
    return not stripped or stripped == "set +e" or stripped.startswith("#")


# ---------------------------------------------------------------- Trixie: cloud-init


def user_data_with_runcmd(existing: str | None) -> str:
    """cloud-init user-data whose `runcmd` enables our installer unit (ours replaced if present)."""
    if existing is None or not existing.strip():
        existing = "#cloud-config\n"
    text = _without_block(existing)
    if not text.startswith("#cloud-config"):
        raise ProvisionError("user-data is not #cloud-config YAML: refusing to edit it")
    lines = text.splitlines(keepends=True)
    key_at = next((i for i, line in enumerate(lines) if re.match(r"^runcmd\s*:", line)), None)
    if key_at is None:
        if not text.endswith("\n"):
            text += "\n"
        return text + "runcmd:\n" + _runcmd_items("  ")
    if not re.match(r"^runcmd\s*:\s*(#.*)?$", lines[key_at]):
        raise ProvisionError("user-data's runcmd is written inline; make it a block list first")
    indent = _item_indent(lines[key_at + 1 :])
    return "".join([*lines[: key_at + 1], _runcmd_items(indent), *lines[key_at + 1 :]])


def _item_indent(following: list[str]) -> str:
    """The indentation existing runcmd items use: YAML needs ours to match."""
    for line in following:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = re.match(r"^(\s*)- ", line)
        return match.group(1) if match else "  "
    return "  "


def _runcmd_items(indent: str) -> str:
    unit = f"{BOOT_DIR_ON_PI}/{INSTALL_UNIT}"
    items = [
        BEGIN,
        f'- [install, -m, "0644", {unit}, /etc/systemd/system/{INSTALL_UNIT}]',
        "- [systemctl, daemon-reload]",
        # --no-block: runcmd itself runs inside cloud-final.service, and the
        # installer waits for network-online.target, which must not wait for us.
        f"- [systemctl, enable, --now, --no-block, {INSTALL_UNIT}]",
        END,
    ]
    return "".join(f"{indent}{item}\n" for item in items)


def network_config(wifi: Wifi) -> str:
    """cloud-init network-config (netplan v2): Ethernet by DHCP, plus the venue Wi-Fi."""

    def quoted(value: str) -> str:
        return json.dumps(value, ensure_ascii=False)  # a JSON string is a YAML string

    return (
        f"{BEGIN}\n"
        "network:\n"
        "  version: 2\n"
        "  ethernets:\n"
        "    eth0:\n"
        "      dhcp4: true\n"
        "      optional: true\n"
        "  wifis:\n"
        "    wlan0:\n"
        "      dhcp4: true\n"
        "      optional: true\n"
        f"      regulatory-domain: {quoted(wifi.country)}\n"
        "      access-points:\n"
        f"        {quoted(wifi.ssid)}:\n"
        f"          password: {quoted(wifi.password)}\n"
    )


def _without_block(text: str) -> str:
    pattern = re.compile(
        rf"^[ \t]*{re.escape(BEGIN)}\n.*?^[ \t]*{re.escape(END)}\n\n?", re.S | re.M
    )
    return pattern.sub("", text)
