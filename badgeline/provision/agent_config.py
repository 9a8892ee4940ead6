"""The agent's TOML config as `badgeline provision` writes it onto the image.

Keys follow badgeline.agent.config.AgentSettings (tests load the result with
it). TOML is written by hand, not with a library: a handful of flat keys, and
JSON's string escapes are valid TOML basic strings.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from badgeline.agent.config import ENROLMENT_CODE_PATTERN
from badgeline.protocol.ids import PRINTER_ID_PATTERN

# Where the unit's StateDirectory= puts the journal and the agent token.
AGENT_STATE_DIR = "/var/lib/badgeline-agent"
# Where install-agent.sh puts a coordinator-ca.pem found beside agent.toml.
AGENT_CA_FILE = "/etc/badgeline/coordinator-ca.pem"
AGENT_STATUS_PORT = 8421
_HEX_ID = r"(?:0x)?[0-9a-fA-F]{4}"


class PrinterSpecError(ValueError):
    """A --printer value that names no connection we know."""


@dataclass(frozen=True)
class AgentConfig:
    printer_id: str
    printer: dict[str, str | int]
    coordinator_url: str | None = None  # None: found by mDNS
    token: str | None = None
    enrolment_code: str | None = None
    venue: str | None = None
    coordinator_ca_file: str | None = None  # the path on the Pi (AGENT_CA_FILE)

    def __post_init__(self) -> None:
        if not re.match(PRINTER_ID_PATTERN, self.printer_id):
            raise ValueError(
                f"printer id {self.printer_id!r} must look like printer-a or printer-02 "
                "(printer- then 1 to 16 of a-z, 0-9)"
            )
        # Caught here, not on the Pi at its first start (the agent checks it too).
        if self.enrolment_code is not None and not re.match(
            ENROLMENT_CODE_PATTERN, self.enrolment_code
        ):
            raise ValueError(
                "--enrolment-code is not a code the coordinator issues (16 to 64 of"
                " A-Z a-z 0-9 _ -): copy it again from `badgeline enrolment-code`"
            )


def parse_printer(spec: str) -> dict[str, str | int]:
    """`device:/dev/usb/lp0`, `usb:04b8:0202` or `network:10.0.0.21[:9100]` as a TOML table."""
    kind, _, rest = spec.partition(":")
    if kind == "device" and rest.startswith("/"):
        return {"kind": "device", "path": rest}
    if kind == "usb" and re.fullmatch(rf"{_HEX_ID}:{_HEX_ID}", rest):
        vendor, product = rest.split(":")
        return {"kind": "usb", "vendor_id": _hex(vendor), "product_id": _hex(product)}
    if kind == "network" and rest:
        host, _, port = rest.partition(":")
        table: dict[str, str | int] = {"kind": "network", "host": host}
        if port:
            table["port"] = int(port)
        return table
    raise PrinterSpecError(
        f"--printer {spec!r}: use device:/dev/usb/lp0, usb:VENDOR:PRODUCT (as lsusb shows it) "
        "or network:HOST[:PORT]"
    )


def _hex(text: str) -> str:
    return "0x" + text.lower().removeprefix("0x")


def _value(value: str | int) -> str:
    return str(value) if isinstance(value, int) else json.dumps(value, ensure_ascii=False)


def render_agent_toml(config: AgentConfig) -> str:
    # No timestamp: provisioning the same image twice must give the same bytes.
    lines = [
        "# Written by `badgeline provision`. Every key: badgeline/agent/config.py.",
        f"printer_id = {_value(config.printer_id)}",
    ]
    if config.coordinator_url:
        lines.append(f"coordinator_url = {_value(config.coordinator_url)}")
    else:
        lines.append(
            "# no coordinator_url: the agent finds the coordinator by mDNS (_badgeline._tcp)"
        )
    if config.venue:
        lines.append(f"venue = {_value(config.venue)}")
    if config.token:
        lines.append(f"token = {_value(config.token)}")
    if config.enrolment_code:
        # One-time: exchanged on first contact for an agent token kept (0600) in state_dir.
        lines.append(f"enrolment_code = {_value(config.enrolment_code)}")
    if config.coordinator_ca_file:
        lines.append(f"coordinator_ca_file = {_value(config.coordinator_ca_file)}")
    lines += [
        f"state_dir = {_value(AGENT_STATE_DIR)}",
        f"status_port = {AGENT_STATUS_PORT}",
        "",
        "[printer]",
        *(f"{key} = {_value(value)}" for key, value in config.printer.items()),
    ]
    return "\n".join(lines) + "\n"
