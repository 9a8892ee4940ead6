"""UsbLink: a printer spoken to directly with libusb, via escpos Usb and pyusb.

Field facts this module is shaped by:

- python-escpos's ``Usb(..., backend=...)`` silently drops ``backend``; a
  backend only takes effect inside ``usb_args``.
- Its transfer timeout defaults to 0, which libusb reads as "wait forever";
  the connection model refuses 0 and we pass ``timeout_ms`` everywhere,
  including pyusb's default timeout that escpos's ``_read`` relies on.
- The two complaints technicians meet on a Pi are "Access denied" (no udev
  rule) and "Resource busy" (the kernel's usblp driver owns the interface):
  both become a ``PrinterAccessError`` that says what to do.
- Endpoint addresses differ between models (0x01/0x82 on Epson, 0x02/0x81 or
  0x03/0x81 on many clones): unless configured, they are read from the
  descriptors of the printer's interface.
"""

from __future__ import annotations

import errno
from dataclasses import dataclass
from typing import Any

from badgeline.agent.printers._escpos import escpos_api
from badgeline.agent.printers.connection import UsbConnection
from badgeline.agent.printers.errors import (
    PrinterAccessError,
    PrinterLinkError,
    PrinterNotFoundError,
    PrinterTimeoutError,
)
from badgeline.agent.printers.link import MAX_DRAIN_READS, PrinterLink

USB_CLASS_PRINTER = 7
# Short enough that draining before every status query stays cheap.
_DRAIN_TIMEOUT_MS = 10
_DRAIN_CHUNK = 64
_GONE_ERRNOS = frozenset({errno.ENODEV, errno.ENOENT, errno.ESHUTDOWN})


class UsbLink(PrinterLink):
    """A printer on a USB port, found by vendor and product id.

    ``backend`` is a pyusb backend object; None lets pyusb pick libusb. Tests
    pass a fake one, since there is no USB printer on a CI machine.
    """

    def __init__(self, connection: UsbConnection, *, backend: Any = None) -> None:
        super().__init__(f"USB printer {connection.usb_id}")
        self.connection = connection
        self._backend = backend
        self._printer: Any = None
        self._in_endpoint: int | None = None

    @property
    def timeout_s(self) -> float:
        return self.connection.timeout_ms / 1000

    @property
    def can_read_status(self) -> bool:
        return self._printer is None or self._in_endpoint is not None

    def _open_device(self) -> None:
        api = escpos_api()
        usb_args: dict[str, Any] = {
            "idVendor": self.connection.vendor_id,
            "idProduct": self.connection.product_id,
        }
        if self._backend is not None:
            usb_args["backend"] = self._backend
        printer = api.printer.Usb(usb_args=usb_args, timeout=self.connection.timeout_ms)
        try:
            printer.open()
        except api.device_not_found as error:
            raise self._open_error(error.__context__) from error
        except api.usb_core.NoBackendError as error:
            raise PrinterLinkError(
                f"{self.description}: pyusb found no libusb (install libusb-1.0-0)"
            ) from error
        try:
            self._configure(printer)
        except BaseException:
            printer.close()  # release the interface we may have claimed
            raise
        self._printer = printer

    def _configure(self, printer: Any) -> None:
        device = printer.device
        if device is None:
            # escpos signals "not found" with an assert, which python -O strips.
            raise self._open_error(None)
        device.default_timeout = self.connection.timeout_ms
        out_endpoint, in_endpoint = self._endpoints(device)
        printer.out_ep = out_endpoint
        if in_endpoint is not None:
            printer.in_ep = in_endpoint
        self._in_endpoint = in_endpoint

    def _open_error(self, cause: BaseException | None) -> PrinterLinkError:
        if isinstance(cause, OSError) and cause.errno is not None:
            return self._link_error(cause)
        return PrinterNotFoundError(
            f"{self.description} not found: is it plugged in and switched on? "
            "(lsusb lists it when the kernel sees it)"
        )

    def _endpoints(self, device: Any) -> tuple[int, int | None]:
        interfaces = _bulk_interfaces(device)
        # The printer-class interface if there is one, else the first that can take data.
        preferred = next((i for i in interfaces if i.is_printer), None) or next(
            iter(interfaces), None
        )
        out_endpoint = self.connection.out_endpoint
        if out_endpoint is None and preferred is not None:
            out_endpoint = preferred.outs[0]
        in_endpoint = self.connection.in_endpoint
        if in_endpoint is None and preferred is not None and preferred.ins:
            in_endpoint = preferred.ins[0]
        all_out = [a for i in interfaces for a in i.outs]
        all_in = [a for i in interfaces for a in i.ins]
        if out_endpoint not in all_out or (in_endpoint is not None and in_endpoint not in all_in):
            raise PrinterLinkError(
                f"{self.description}: endpoints OUT {_hex(out_endpoint)} / IN {_hex(in_endpoint)}"
                f" do not exist; the device has bulk OUT {_hex(*all_out)} and IN {_hex(*all_in)}"
            )
        assert out_endpoint is not None
        return out_endpoint, in_endpoint

    @property
    def stall_timeout_s(self) -> float:
        return self.connection.stall_timeout_s

    def _write(self, data: bytes) -> None:
        # A chunk may take up to the stall timeout, not timeout_ms: a printer whose
        # buffer is full NAKs until it has printed some room (busy, not gone). Not
        # retried after a timeout instead: libusb may have moved part of it.
        printer = self._printer
        printer.device.write(printer.out_ep, data, int(self.stall_timeout_s * 1000))

    def _drain(self) -> bytes:
        timeout_error = escpos_api().usb_core.USBTimeoutError
        drained = bytearray()
        for _ in range(MAX_DRAIN_READS):
            try:
                data = self._printer.device.read(self._in_endpoint, _DRAIN_CHUNK, _DRAIN_TIMEOUT_MS)
            except timeout_error:
                break
            drained += bytes(data)
        return bytes(drained)

    def _read_reply(self) -> bytes | None:
        try:
            if self.reply_chunk is not None:
                device = self._printer.device
                return bytes(device.read(self._in_endpoint, self.reply_chunk))
            # escpos's Usb._read: read(in_ep, 16) under pyusb's default timeout, set at open.
            return bytes(self._printer._read())
        except escpos_api().usb_core.USBTimeoutError:
            return None

    def _link_error(self, error: OSError) -> PrinterLinkError:
        if isinstance(error, escpos_api().usb_core.USBTimeoutError):
            return PrinterTimeoutError(f"{self.description}: the printer stopped taking data")
        return _usb_error(self.description, error)

    def _close_device(self) -> None:
        printer, self._printer = self._printer, None
        self._in_endpoint = None
        if printer is not None:
            printer.close()


def _usb_error(description: str, error: OSError) -> PrinterLinkError:
    if error.errno in (errno.EACCES, errno.EPERM):
        return PrinterAccessError(
            f"{description}: access denied; add a udev rule giving the agent's user "
            "(or group lp) this device, then replug it"
        )
    if error.errno == errno.EBUSY:
        return PrinterAccessError(
            f"{description}: resource busy; the kernel's usblp driver or another program "
            "holds it (detach usblp, or use a device connection to /dev/usb/lp0)"
        )
    if error.errno in _GONE_ERRNOS:
        return PrinterNotFoundError(f"{description} disconnected: {error}")
    return PrinterLinkError(f"{description}: {error}")


@dataclass(frozen=True)
class _BulkInterface:
    is_printer: bool
    outs: list[int]  # never empty: interfaces without a bulk OUT are skipped
    ins: list[int]


def _bulk_interfaces(device: Any) -> list[_BulkInterface]:
    """The interfaces of the active configuration that have a bulk OUT endpoint."""
    util = escpos_api().usb_util
    found = []
    for interface in device.get_active_configuration():
        bulk = [
            endpoint.bEndpointAddress
            for endpoint in interface
            if util.endpoint_type(endpoint.bmAttributes) == util.ENDPOINT_TYPE_BULK
        ]
        outs = [a for a in bulk if util.endpoint_direction(a) == util.ENDPOINT_OUT]
        ins = [a for a in bulk if util.endpoint_direction(a) == util.ENDPOINT_IN]
        if outs:
            found.append(_BulkInterface(interface.bInterfaceClass == USB_CLASS_PRINTER, outs, ins))
    return found


def _hex(*addresses: int | None) -> str:
    return ", ".join("none" if a is None else f"{a:#04x}" for a in addresses) or "none"
