"""`badgeline provision IMAGE --printer-id …`: a Pi OS image that installs an agent on first boot.

Writes into the image's FAT boot partition without mounting it (no root, no
loop device): the agent config, the installer and its wheel(s), and the hook
that runs the installer on first boot (cloud-init on Trixie, firstrun.sh on
Bookworm). Flash the image afterwards with Raspberry Pi Imager or dd.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from badgeline.provision.agent_config import (
    AGENT_CA_FILE,
    AgentConfig,
    PrinterSpecError,
    parse_printer,
)
from badgeline.provision.assets import AssetsMissing
from badgeline.provision.boot import BootSystem, ProvisionError, Wifi
from badgeline.provision.image import ImageError
from badgeline.provision.provision import ProvisionRequest, provision


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("image", type=Path, help="an unpacked Raspberry Pi OS Lite .img file")
    parser.add_argument("--printer-id", required=True, help="e.g. printer-02")
    parser.add_argument(
        "--printer", default="device:/dev/usb/lp0",
        help="device:/dev/usb/lp0 (default), usb:VENDOR:PRODUCT or network:HOST[:PORT]",
    )  # fmt: skip
    parser.add_argument("--coordinator-url", help="http://host:8420; omit to find it by mDNS")
    parser.add_argument("--venue", help="with mDNS: only follow this venue's coordinator")
    parser.add_argument(
        "--coordinator-ca", type=Path, metavar="PEM",
        help="certificate (or CA) of an https coordinator for the agent to trust",
    )  # fmt: skip
    secret = parser.add_mutually_exclusive_group(required=True)
    secret.add_argument("--enrolment-code", help="one-time code from the coordinator's operator")
    secret.add_argument("--token", help="an agent token bound to --printer-id")
    parser.add_argument("--wifi-ssid")
    parser.add_argument("--wifi-password")
    parser.add_argument("--wifi-country", help="two letters, e.g. GB, DE, US (unblocks the radio)")
    parser.add_argument(
        "--wheel", action="append", type=Path, required=True,
        help="badgeline-*.whl to install (repeat to bundle dependency wheels for offline venues)",
    )  # fmt: skip
    parser.add_argument(
        "--boot-system", choices=["auto", "cloud-init", "firstrun"], default="auto",
        help="override detection: cloud-init (Trixie, Oct 2025+) or firstrun (Bookworm)",
    )  # fmt: skip


def _wifi(args: argparse.Namespace) -> Wifi | None:
    given = [args.wifi_ssid, args.wifi_password, args.wifi_country]
    if not any(given):
        return None
    if not all(given):
        raise ProvisionError("Wi-Fi needs --wifi-ssid, --wifi-password and --wifi-country")
    if len(args.wifi_country) != 2 or not args.wifi_country.isalpha():
        raise ProvisionError("--wifi-country is a two-letter code such as GB")
    # WPA-PSK's rule, which nmcli (Bookworm) and netplan (Trixie) enforce on the Pi
    # itself at first boot: a shorter password there means a Pi that never joins.
    if not (8 <= len(args.wifi_password) <= 63 and args.wifi_password.isascii()) and not (
        len(args.wifi_password) == 64
        and all(c in "0123456789abcdefABCDEF" for c in args.wifi_password)
    ):
        raise ProvisionError("--wifi-password: a WPA password is 8 to 63 ASCII characters")
    return Wifi(args.wifi_ssid, args.wifi_password, args.wifi_country.upper())


def build_request(args: argparse.Namespace) -> ProvisionRequest:
    agent = AgentConfig(
        printer_id=args.printer_id,
        printer=parse_printer(args.printer),
        coordinator_url=args.coordinator_url,
        token=args.token,
        enrolment_code=args.enrolment_code,
        venue=args.venue,
        coordinator_ca_file=AGENT_CA_FILE if args.coordinator_ca else None,
    )
    system = None if args.boot_system == "auto" else BootSystem(args.boot_system)
    return ProvisionRequest(
        args.image, agent, list(args.wheel), _wifi(args), system, args.coordinator_ca
    )


def run(args: argparse.Namespace) -> int:
    try:
        provision(build_request(args), progress=lambda line: print(line, flush=True))
    except (ProvisionError, ImageError, AssetsMissing, PrinterSpecError, ValueError) as error:
        print(f"provision: {error}", file=sys.stderr)
        return 2
    return 0
