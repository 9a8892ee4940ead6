"""The agent's printer layer: how an agent reaches its printer and reads its health.

``connection`` holds the typed config, ``link`` the small blocking surface
(``open / write / read_status / close``) with one implementation per kind of
cable, ``async_link`` the asyncio facade, and ``status`` the DLE EOT probe and
its mapping to a ``PrinterHealthReport``.

Network, emulator and device links write ESC/POS bytes to their socket or file
themselves; only the USB link goes through python-escpos (and pyusb), which it
imports on first use, so an agent on any other cable never imports them.
"""

from badgeline.agent.printers.async_link import AsyncPrinterLink
from badgeline.agent.printers.connection import (
    DeviceConnection,
    EmulatorConnection,
    NetworkConnection,
    PrinterConnection,
    UsbConnection,
    parse_connection,
)
from badgeline.agent.printers.device_link import DeviceLink
from badgeline.agent.printers.errors import (
    MarkNotSentError,
    PrinterAccessError,
    PrinterLinkError,
    PrinterNotFoundError,
    PrinterTimeoutError,
    StatusUnavailableError,
)
from badgeline.agent.printers.factory import link_for
from badgeline.agent.printers.link import PrinterLink
from badgeline.agent.printers.network_link import NetworkLink
from badgeline.agent.printers.realtime_status import (
    StatusBytes,
    StatusQuery,
    health_from_status,
    probe_health,
    read_status_bytes,
)
from badgeline.agent.printers.usb_link import UsbLink

__all__ = [
    "AsyncPrinterLink",
    "DeviceConnection",
    "DeviceLink",
    "EmulatorConnection",
    "MarkNotSentError",
    "NetworkConnection",
    "NetworkLink",
    "PrinterAccessError",
    "PrinterConnection",
    "PrinterLink",
    "PrinterLinkError",
    "PrinterNotFoundError",
    "PrinterTimeoutError",
    "StatusBytes",
    "StatusQuery",
    "StatusUnavailableError",
    "UsbConnection",
    "UsbLink",
    "health_from_status",
    "link_for",
    "parse_connection",
    "probe_health",
    "read_status_bytes",
]
