"""Connection config: the four kinds, hex ids from TOML, and what is refused."""

from __future__ import annotations

import tomllib
from typing import Any

import pytest
from pydantic import ValidationError

from badgeline.agent.printers import (
    DeviceConnection,
    DeviceLink,
    EmulatorConnection,
    NetworkConnection,
    NetworkLink,
    UsbConnection,
    UsbLink,
    link_for,
    parse_connection,
)

AGENT_TOML = """
[network]
kind = "network"
host = "10.0.0.21"

[usb]
kind = "usb"
vendor_id = "0x04b8"
product_id = "0e28"
out_endpoint = 0x01

[device]
kind = "device"
path = "/dev/usb/lp0"

[emulator]
kind = "emulator"
host = "127.0.0.1"
port = 9911
timeout_s = 0.5
"""


def test_each_kind_parses_from_toml_with_its_defaults() -> None:
    # GIVEN connection tables as a technician writes them in the agent's TOML
    tables = tomllib.loads(AGENT_TOML)
    # WHEN each is parsed
    parsed = {name: parse_connection(table) for name, table in tables.items()}
    # THEN each becomes its own model, defaults filled in, hex read as hex
    assert parsed["network"] == NetworkConnection(host="10.0.0.21", port=9100, timeout_s=3.0)
    assert parsed["usb"] == UsbConnection(
        vendor_id=0x04B8, product_id=0x0E28, out_endpoint=0x01, in_endpoint=None, timeout_ms=2000
    )
    assert parsed["device"] == DeviceConnection(path="/dev/usb/lp0", timeout_s=3.0)
    assert parsed["emulator"] == EmulatorConnection(host="127.0.0.1", port=9911, timeout_s=0.5)


@pytest.mark.parametrize(
    ("written", "value"),
    [("0x04b8", 0x04B8), ("0X04B8", 0x04B8), ("04b8", 0x04B8), (" 0x1fc9 ", 0x1FC9), (1208, 1208)],
)
def test_usb_ids_accept_hex_strings_and_ints(written: Any, value: int) -> None:
    connection = parse_connection({"kind": "usb", "vendor_id": written, "product_id": 1})
    assert isinstance(connection, UsbConnection)
    assert connection.vendor_id == value


@pytest.mark.parametrize(
    ("table", "complaint"),
    [
        ({"kind": "usb", "vendor_id": "0x04b8", "product_id": 1, "timeout_ms": 0}, "timeout_ms"),
        ({"kind": "usb", "vendor_id": "epson", "product_id": 1}, "not a hexadecimal number"),
        ({"kind": "usb", "vendor_id": "0x10000", "product_id": 1}, "vendor_id"),
        ({"kind": "usb", "vendor_id": True, "product_id": 1}, "vendor_id"),
        ({"kind": "usb", "vendor_id": 1, "product_id": 1, "in_endpoint": "0x02"}, "OUT address"),
        ({"kind": "usb", "vendor_id": 1, "product_id": 1, "out_endpoint": "0x81"}, "IN address"),
        ({"kind": "network", "host": "p1", "port": "9100"}, "port"),
        ({"kind": "network", "host": "p1", "timeout_s": 0}, "timeout_s"),
        ({"kind": "network", "host": ""}, "host"),
        ({"kind": "network", "host": "p1", "width_dots": 576}, "width_dots"),
        ({"kind": "device", "path": "usb/lp0"}, "path"),
        ({"kind": "serial", "path": "/dev/ttyUSB0"}, "kind"),
        ({"host": "p1"}, "kind"),
    ],
)
def test_bad_connection_tables_are_refused_at_start_up(
    table: dict[str, Any], complaint: str
) -> None:
    # GIVEN a table with a mistake a technician could make
    # WHEN it is parsed
    with pytest.raises(ValidationError) as refused:
        parse_connection(table)
    # THEN validation names the problem
    assert complaint in str(refused.value)


def test_usb_id_prints_like_lsusb() -> None:
    assert UsbConnection(vendor_id=0x4B8, product_id=0x202).usb_id == "04b8:0202"


def test_link_for_builds_the_link_of_each_kind_without_connecting() -> None:
    # GIVEN one connection of each kind (none of these printers exists)
    # WHEN links are built
    # THEN each kind gets its link class, and nothing is opened yet
    links = [
        link_for(NetworkConnection(host="192.0.2.1")),
        link_for(EmulatorConnection(host="127.0.0.1", port=1)),
        link_for(UsbConnection(vendor_id=1, product_id=2)),
        link_for(DeviceConnection(path="/nonexistent/lp0")),
    ]
    assert [type(link) for link in links] == [NetworkLink, NetworkLink, UsbLink, DeviceLink]
    assert not any(link.is_open for link in links)
