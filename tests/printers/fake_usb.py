"""A pyusb backend that enumerates one ESC/POS-like USB printer, for tests.

There is no USB hardware on a CI machine, so this is the one stand-in the
printer tests use. It sits below pyusb (``usb.backend.IBackend``), so
everything above it is the real code: ``usb.core.find``, pyusb's descriptor
objects and interface claiming, python-escpos's ``Usb`` printer and our
``UsbLink``.

The device has one configuration with one printer-class interface and two
bulk endpoints (OUT 0x01 and IN 0x82 by default, as on Epson printers). Every
byte written to OUT is recorded in ``written``; each ``DLE EOT n`` seen in
that stream queues the reply byte ``status[n]`` for the IN endpoint (see
``dle_eot.StatusResponder``), unless
``answering`` is False (a printer that is switched off but still enumerated,
or hung). Reads on IN with nothing queued raise ``USBTimeoutError`` at once,
as libusb does when the timeout expires.

``accept_limit`` caps the bytes OUT takes in all: past it a transfer moves only
what fits, then times out, as libusb's does when the printer stops taking data
(its buffer full, its paper out). ``unplug()`` removes the device: it is no
longer enumerated and transfers on open handles fail with ENODEV.
``claim_error`` makes claiming the interface fail with that errno (EACCES for
a missing udev rule, EBUSY for usblp).
"""

from __future__ import annotations

import array
import errno
import threading
from dataclasses import dataclass, field
from typing import Any

import usb.backend
import usb.core

from .dle_eot import StatusResponder

ENDPOINT_BULK = 0x02  # bmAttributes transfer type


@dataclass
class _DeviceDescriptor:
    idVendor: int
    idProduct: int
    bLength: int = 18
    bDescriptorType: int = 0x01
    bcdUSB: int = 0x0200
    bDeviceClass: int = 0  # class given per interface, as on real printers
    bDeviceSubClass: int = 0
    bDeviceProtocol: int = 0
    bMaxPacketSize0: int = 64
    bcdDevice: int = 0x0100
    iManufacturer: int = 0
    iProduct: int = 0
    iSerialNumber: int = 0
    bNumConfigurations: int = 1
    bus: int = 1
    address: int = 4
    port_number: int = 1
    port_numbers: tuple[int, ...] = (1,)
    speed: int = 2  # full speed


@dataclass
class _ConfigurationDescriptor:
    bLength: int = 9
    bDescriptorType: int = 0x02
    wTotalLength: int = 32
    bNumInterfaces: int = 1
    bConfigurationValue: int = 1
    iConfiguration: int = 0
    bmAttributes: int = 0xC0
    bMaxPower: int = 50
    extra_descriptors: list[int] = field(default_factory=list)


@dataclass
class _InterfaceDescriptor:
    bLength: int = 9
    bDescriptorType: int = 0x04
    bInterfaceNumber: int = 0
    bAlternateSetting: int = 0
    bNumEndpoints: int = 2
    bInterfaceClass: int = 7  # printer
    bInterfaceSubClass: int = 1
    bInterfaceProtocol: int = 2  # bidirectional
    iInterface: int = 0
    extra_descriptors: list[int] = field(default_factory=list)


@dataclass
class _EndpointDescriptor:
    bEndpointAddress: int
    bLength: int = 7
    bDescriptorType: int = 0x05
    bmAttributes: int = ENDPOINT_BULK
    wMaxPacketSize: int = 64
    bInterval: int = 0
    bRefresh: int = 0
    bSynchAddress: int = 0
    extra_descriptors: list[int] = field(default_factory=list)


class _Handle:
    """What open_device returns: pyusb passes it back to every transfer."""

    def __init__(self, device_id: int) -> None:
        self.device_id = device_id
        self.closed = False


class FakeUsbPrinterBackend(usb.backend.IBackend):
    """A pyusb backend whose bus holds one ESC/POS printer."""

    def __init__(
        self,
        vendor_id: int = 0x04B8,
        product_id: int = 0x0202,
        *,
        out_endpoint: int = 0x01,
        in_endpoint: int = 0x82,
    ) -> None:
        super().__init__()
        self.vendor_id = vendor_id
        self.product_id = product_id
        self.out_endpoint = out_endpoint
        self.in_endpoint = in_endpoint
        self.responder = StatusResponder()
        self.plugged_in = True
        self.claim_error: int | None = None
        self.written = bytearray()
        self.accept_limit: int | None = None
        self.configuration_value = 0
        self.claimed: set[int] = set()
        self.resets = 0
        self._pending_in = bytearray()
        self._device_id = 1  # a fresh id after each replug, like a new bus address
        self._lock = threading.Lock()

    # ------------------------------------------------------------ test controls

    @property
    def status(self) -> dict[int, int]:
        """Reply to DLE EOT n, by n; delete an n to leave that query unanswered."""
        return self.responder.status

    @property
    def answering(self) -> bool:
        return self.responder.answering

    @answering.setter
    def answering(self, value: bool) -> None:
        self.responder.answering = value

    def unplug(self) -> None:
        with self._lock:
            self.plugged_in = False

    def replug(self) -> None:
        with self._lock:
            self.plugged_in = True
            self._device_id += 1
            self._pending_in.clear()

    def written_bytes(self) -> bytes:
        with self._lock:
            return bytes(self.written)

    # ------------------------------------------------------------ descriptors

    def enumerate_devices(self) -> Any:
        if self.plugged_in:
            yield self._device_id

    def get_parent(self, dev: Any) -> None:
        return None

    def get_device_descriptor(self, dev: Any) -> _DeviceDescriptor:
        return _DeviceDescriptor(idVendor=self.vendor_id, idProduct=self.product_id)

    def get_configuration_descriptor(self, dev: Any, config: int) -> _ConfigurationDescriptor:
        if config != 0:
            raise IndexError("configuration index out of range")
        return _ConfigurationDescriptor()

    def get_interface_descriptor(
        self, dev: Any, intf: int, alt: int, config: int
    ) -> _InterfaceDescriptor:
        # pyusb walks alternate settings until IndexError: there is only one.
        if (intf, alt, config) != (0, 0, 0):
            raise IndexError("interface index out of range")
        return _InterfaceDescriptor()

    def get_endpoint_descriptor(
        self, dev: Any, ep: int, intf: int, alt: int, config: int
    ) -> _EndpointDescriptor:
        addresses = (self.out_endpoint, self.in_endpoint)
        if (intf, alt, config) != (0, 0, 0) or not 0 <= ep < len(addresses):
            raise IndexError("endpoint index out of range")
        return _EndpointDescriptor(bEndpointAddress=addresses[ep])

    # ------------------------------------------------------------ device handle

    def open_device(self, dev: Any) -> _Handle:
        self._require_present(dev)
        return _Handle(dev)

    def close_device(self, dev_handle: _Handle) -> None:
        dev_handle.closed = True

    def set_configuration(self, dev_handle: _Handle, config_value: int) -> None:
        self._require_present(dev_handle.device_id)
        self.configuration_value = config_value

    def get_configuration(self, dev_handle: _Handle) -> int:
        self._require_present(dev_handle.device_id)
        return self.configuration_value

    def set_interface_altsetting(self, dev_handle: _Handle, intf: int, altsetting: int) -> None:
        self._require_present(dev_handle.device_id)

    def claim_interface(self, dev_handle: _Handle, intf: int) -> None:
        self._require_present(dev_handle.device_id)
        if self.claim_error is not None:
            raise usb.core.USBError("claim refused", errno=self.claim_error)
        self.claimed.add(intf)

    def release_interface(self, dev_handle: _Handle, intf: int) -> None:
        self.claimed.discard(intf)

    def reset_device(self, dev_handle: _Handle) -> None:
        # libusb restores the active configuration after a reset; so do we.
        self._require_present(dev_handle.device_id)
        self.resets += 1

    def clear_halt(self, dev_handle: _Handle, ep: int) -> None:
        self._require_present(dev_handle.device_id)

    def is_kernel_driver_active(self, dev_handle: _Handle, intf: int) -> bool:
        return False

    def detach_kernel_driver(self, dev_handle: _Handle, intf: int) -> None:
        return None

    # ------------------------------------------------------------ transfers

    def bulk_write(
        self, dev_handle: _Handle, ep: int, intf: int, data: array.array[int], timeout: int
    ) -> int:
        self._require_present(dev_handle.device_id)
        if ep != self.out_endpoint:
            raise usb.core.USBError(f"bulk write to {ep:#04x}", errno=errno.EPIPE)
        with self._lock:
            taken = data.tobytes()
            if self.accept_limit is not None:
                taken = taken[: max(0, self.accept_limit - len(self.written))]
            self.written += taken
            self._pending_in += self.responder.feed(taken)
            if len(taken) < len(data) * data.itemsize:
                raise usb.core.USBTimeoutError("Operation timed out", errno=errno.ETIMEDOUT)
        return len(taken)

    def bulk_read(
        self, dev_handle: _Handle, ep: int, intf: int, buff: array.array[int], timeout: int
    ) -> int:
        self._require_present(dev_handle.device_id)
        if ep != self.in_endpoint:
            raise usb.core.USBError(f"bulk read from {ep:#04x}", errno=errno.EPIPE)
        with self._lock:
            if not self._pending_in:
                raise usb.core.USBTimeoutError("Operation timed out", errno=errno.ETIMEDOUT)
            count = min(len(buff), len(self._pending_in))
            buff[:count] = array.array("B", self._pending_in[:count])
            del self._pending_in[:count]
        return count

    def _require_present(self, device_id: Any) -> None:
        if not self.plugged_in or device_id != self._device_id:
            raise usb.core.USBError("No such device", errno=errno.ENODEV)
