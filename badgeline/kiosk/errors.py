"""What the kiosk library raises to the integrator: one base class, a few precise kinds.

A scan is either durably in the outbox when `submit` returns, or `submit` raised
one of these and the scan was not kept: the integrator must never have to guess.
"""

from __future__ import annotations


class KioskError(Exception):
    """Base of every error the kiosk library raises on purpose."""


class ScanInvalid(KioskError, ValueError):
    """The scan itself is wrong (attendee id, target, priority, PDF): it was not kept,
    and the coordinator would refuse it the same way. Fix the input; do not retry."""


class OutboxWriteError(KioskError):
    """The outbox could not write the scan (disk full, read-only, I/O error): it was NOT
    kept. Scans acknowledged before are unaffected. Free space, then submit it again."""


class OutboxCorrupt(KioskError):
    """The outbox file fails its check at open. Nothing was changed; the message says
    how to start anyway (`on_corrupt_outbox="salvage"`)."""


class OutboxInUse(KioskError):
    """Another Kiosk (in this process or another) has this outbox open."""


class UnknownScan(KioskError, LookupError):
    """No scan or job of that id in this kiosk's outbox (or at the coordinator)."""


class NotReprintable(KioskError):
    """A reprint was asked of a scan that has no job yet, or was refused."""
