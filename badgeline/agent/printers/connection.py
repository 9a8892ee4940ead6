"""How an agent reaches its printer: one typed model per kind of link.

The agent's TOML config holds one ``[printer.connection]`` table; ``kind``
picks the model::

    kind = "network"                  # Ethernet/Wi-Fi printer, raw TCP (JetDirect)
    host = "10.0.0.21"
    port = 9100                       # default
    timeout_s = 3                     # connect and status-reply timeout
    stall_timeout_s = 15              # every kind: a printer that holds our bytes and
                                      # takes none for this long is gone (else: busy)

    kind = "usb"                      # talk to the printer with libusb (pyusb)
    vendor_id = "0x04b8"              # hex strings as lsusb prints them, or ints
    product_id = "0x0202"
    in_endpoint = "0x82"              # optional: found from the descriptors if unset
    out_endpoint = "0x01"             # optional
    timeout_ms = 2000                 # per USB transfer; 0 (wait forever) is refused

    kind = "device"                   # a device node the kernel's usblp driver made
    path = "/dev/usb/lp0"
    timeout_s = 3

    kind = "emulator"                 # badgeline's ESC/POS emulator: a network printer
    host = "127.0.0.1"
    port = 9100

The print width in dots is not here: it belongs to the agent's printer config,
since it describes the printer, not the cable.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator

USB_ENDPOINT_IN = 0x80  # bit 7 of bEndpointAddress: set for device-to-host endpoints


class _ConnectionModel(BaseModel):
    # Strict: a config typo must fail at start-up, not as a silent default at the desk.
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, str_strip_whitespace=True)


# A printer holding the agent's bytes may take none of them for this long before it
# counts as gone (switched off, cable out); while it takes some, it is busy, not gone.
STALL_TIMEOUT = Field(default=15.0, gt=0, le=600)


class _TcpConnection(_ConnectionModel):
    host: str = Field(min_length=1, max_length=253)
    port: int = Field(default=9100, ge=1, le=65535)
    # python-escpos defaults to 60 s; a heartbeat every second cannot wait that long.
    timeout_s: float = Field(default=3.0, gt=0, le=60)
    stall_timeout_s: float = STALL_TIMEOUT


class NetworkConnection(_TcpConnection):
    """A printer on the LAN that takes raw ESC/POS on a TCP port."""

    kind: Literal["network"] = "network"


class EmulatorConnection(_TcpConnection):
    """badgeline's ESC/POS emulator: a network printer, named so configs read clearly."""

    kind: Literal["emulator"] = "emulator"


def _parse_hex(value: Any) -> Any:
    """TOML users copy ids from lsusb ("04b8") or write "0x04b8": read strings as hex."""
    if isinstance(value, str):
        text = value.strip().lower().removeprefix("0x")
        try:
            return int(text, 16)
        except ValueError:
            raise ValueError(f"{value!r} is not a hexadecimal number") from None
    return value


class UsbConnection(_ConnectionModel):
    """A printer spoken to directly over USB with pyusb/libusb."""

    kind: Literal["usb"] = "usb"
    vendor_id: int = Field(ge=0, le=0xFFFF)
    product_id: int = Field(ge=0, le=0xFFFF)
    in_endpoint: int | None = Field(default=None, ge=0, le=0xFF)
    out_endpoint: int | None = Field(default=None, ge=0, le=0xFF)
    # python-escpos's USB timeout defaults to 0, which libusb reads as "wait forever":
    # a printer that stops reading would hang the print loop, so 0 is not allowed.
    timeout_ms: int = Field(default=2000, ge=1, le=60_000)
    stall_timeout_s: float = STALL_TIMEOUT

    @field_validator("vendor_id", "product_id", "in_endpoint", "out_endpoint", mode="before")
    @classmethod
    def accept_hex_strings(cls, value: Any) -> Any:
        return _parse_hex(value)

    @field_validator("in_endpoint")
    @classmethod
    def require_in_direction(cls, value: int | None) -> int | None:
        if value is not None and not value & USB_ENDPOINT_IN:
            raise ValueError(f"in_endpoint {value:#04x} is an OUT address (bit 7 clear)")
        return value

    @field_validator("out_endpoint")
    @classmethod
    def require_out_direction(cls, value: int | None) -> int | None:
        if value is not None and value & USB_ENDPOINT_IN:
            raise ValueError(f"out_endpoint {value:#04x} is an IN address (bit 7 set)")
        return value

    @property
    def usb_id(self) -> str:
        """The id as lsusb prints it, for messages: ``04b8:0202``."""
        return f"{self.vendor_id:04x}:{self.product_id:04x}"


class DeviceConnection(_ConnectionModel):
    """A printer behind a device node, e.g. /dev/usb/lp0 from the kernel's usblp driver."""

    kind: Literal["device"] = "device"
    path: str = Field(min_length=2, max_length=4096, pattern=r"^/")
    timeout_s: float = Field(default=3.0, gt=0, le=60)
    stall_timeout_s: float = STALL_TIMEOUT


PrinterConnection = Annotated[
    NetworkConnection | UsbConnection | DeviceConnection | EmulatorConnection,
    Field(discriminator="kind"),
]

_CONNECTION_ADAPTER: TypeAdapter[PrinterConnection] = TypeAdapter(PrinterConnection)


def parse_connection(data: Mapping[str, Any]) -> PrinterConnection:
    """Validate a connection table (from TOML or JSON) into its typed model."""
    return _CONNECTION_ADAPTER.validate_python(dict(data))
