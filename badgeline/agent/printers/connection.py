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

Every kind also takes what the printer speaks and prints on (printers/family.py)::

    language = "zpl"                  # escpos (default), zpl or brother_ql
    model = "ZD421"                   # zpl: ZD421, ZD621, ZD411; brother_ql: QL-820NWB, …
    dpi = 203                         # zpl: 203 or 300
    label_width_dots = 812            # zpl: default the model's badge label (4 in, 2 in)
    label_length_dots = 609           # zpl: default what the printer reports (~HS)
    media = "62x100"                  # brother_ql: the DK roll, width or width x length mm
    cut = true                        # label printers: cut each badge (zpl: ^MMC)

An ESC/POS printer's width in dots is not here (`width_dots`, `escpos_profile`
in the agent's settings): it is the paper's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator, model_validator

from badgeline.agent.printers.family import PrinterFamily, family_for

USB_ENDPOINT_IN = 0x80  # bit 7 of bEndpointAddress: set for device-to-host endpoints


class _ConnectionModel(BaseModel):
    # Strict: a config typo must fail at start-up, not as a silent default at the desk.
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, str_strip_whitespace=True)

    # What the printer speaks and what it prints on, beside how it is reached
    # (printers/family.py): one `[printer]` table holds both.
    language: Literal["escpos", "zpl", "brother_ql"] = "escpos"
    model: str | None = Field(default=None, min_length=1, max_length=32)
    dpi: int | None = Field(default=None, ge=100, le=600)
    label_width_dots: int | None = Field(default=None, ge=64, le=2400)
    label_length_dots: int | None = Field(default=None, ge=64, le=12000)
    media: str | None = Field(default=None, min_length=1, max_length=16)
    cut: bool | None = None

    @model_validator(mode="after")
    def known_media(self) -> _ConnectionModel:
        """The family's settings only for it, and media its model takes."""
        only = {"zpl": ("dpi", "label_width_dots", "label_length_dots"), "brother_ql": ("media",)}
        for language, keys in only.items():
            for key in keys:
                if getattr(self, key) is not None and self.language != language:
                    raise ValueError(f'printer.{key} is for language = "{language}"')
        if self.language == "escpos" and (self.cut is not None or self.model is not None):
            raise ValueError("printer.cut and printer.model are for label printers (an ESC/POS"
                             " badge is always cut; its model is escpos_profile)")  # fmt: skip
        self.family()  # a model or media it does not take: ValueError naming the setting
        return self

    def family(self) -> PrinterFamily:
        """A new family object for this printer (the agent makes one and keeps it)."""
        return family_for(self.language, model=self.model, dpi=self.dpi, media=self.media,
                          label_width_dots=self.label_width_dots,
                          label_length_dots=self.label_length_dots, cut=self.cut)  # fmt: skip


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
