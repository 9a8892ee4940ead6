"""link_for: the one place that turns a connection config into a printer link."""

from __future__ import annotations

from typing import Any

from badgeline.agent.printers.connection import (
    DeviceConnection,
    EmulatorConnection,
    NetworkConnection,
    PrinterConnection,
    UsbConnection,
)
from badgeline.agent.printers.device_link import DeviceLink
from badgeline.agent.printers.family import PrinterFamily
from badgeline.agent.printers.link import PrinterLink
from badgeline.agent.printers.network_link import NetworkLink
from badgeline.agent.printers.usb_link import UsbLink


def link_for(
    connection: PrinterConnection,
    *,
    write_only: bool = False,
    usb_backend: Any = None,
    family: PrinterFamily | None = None,
) -> PrinterLink:
    """Build the (not yet opened) link for a connection; ``usb_backend`` is for tests.

    ``write_only``: the printer is never asked anything (no status queries, no
    process ID requests); its health comes from the link. ``family``: the
    language the printer speaks, whose replies the link reads (ESC/POS if None).
    """
    link: PrinterLink
    match connection:
        case NetworkConnection() | EmulatorConnection():
            link = NetworkLink(connection)
        case UsbConnection():
            link = UsbLink(connection, backend=usb_backend)
        case DeviceConnection():
            link = DeviceLink(connection)
        case _:
            raise TypeError(f"unknown printer connection {connection!r}")
    link.write_only = write_only
    if family is not None:
        link.reply_factory = family.new_replies
        link.replies = family.new_replies()
        link.reply_chunk = family.reply_chunk
    return link
