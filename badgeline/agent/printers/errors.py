"""The exceptions a printer link raises: one base, one-line subclasses.

Every message names the printer and, where a field fix is known (udev rule,
kernel driver), says what to do: the person reading it is a technician beside a
Raspberry Pi at a registration desk.
"""

from __future__ import annotations


class PrinterLinkError(Exception):
    """The printer could not be reached or stopped answering."""


class PrinterNotFoundError(PrinterLinkError):
    """Nothing answers at the configured address, USB id or device path."""


class PrinterAccessError(PrinterLinkError):
    """The printer is there but this process may not use it (permissions, busy)."""


class PrinterTimeoutError(PrinterLinkError):
    """The printer stopped accepting data within the configured timeout."""


class PrinterBusyError(PrinterLinkError):
    """The printer is busy taking our bytes: a status query waits behind them (no answer yet)."""


class StatusUnavailableError(PrinterLinkError):
    """This link cannot read status bytes back (e.g. a write-only device node)."""


class MarkNotSentError(PrinterLinkError):
    """A badge went to the printer whole, cut included; its process ID request did not."""
