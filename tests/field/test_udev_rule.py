"""The udev rule the installer ships lets the agent (group lp) open, through libusb, a
USB printer of every maker whose vendor id the agent knows: Epson, Zebra and Brother."""

from __future__ import annotations

import re
from pathlib import Path

from badgeline.agent.printers.checks import VENDOR_LANGUAGES

RULE = Path(__file__).resolve().parents[2] / "badgeline/provision/files/99-badgeline-printers.rules"
# One libusb rule: a USB device of this vendor goes to group lp, read-write for it.
LIBUSB_RULE = re.compile(
    r'^SUBSYSTEM=="usb", ENV\{DEVTYPE\}=="usb_device", ATTR\{idVendor\}=="([0-9a-f]{4})",'
    r' GROUP="lp", MODE="0660", TAG\+="badgeline-printer"$'
)


def vendors_with_access() -> set[int]:
    lines = RULE.read_text().splitlines()
    return {int(match[1], 16) for line in lines if (match := LIBUSB_RULE.match(line))}


def test_every_maker_the_agent_knows_is_opened_by_group_lp() -> None:
    covered = vendors_with_access()
    # Zebra 0a5f and Brother 04f9 beside Epson 04b8: the label printers too
    assert {0x0A5F, 0x04F9, 0x04B8} <= covered
    missing = {f"{vendor:04x} ({maker})" for vendor, (maker, _) in VENDOR_LANGUAGES.items()
               if vendor not in covered}  # fmt: skip
    assert missing == set()
