"""badgeline.kiosk: a kiosk's side of exactly-once badge printing.

`Kiosk.submit` returns once the scan is fsynced in a local SQLite outbox; a
background thread then delivers it (PDF upload, job submission) under one
idempotency key until the coordinator accepts or refuses it for good, through
coordinator restarts, replica changes and kiosk restarts. Standard library and
pydantic only (zeroconf when `discover=True`); never aiohttp, redis or the
coordinator's code. The integrator's guide is docs/kiosk.md.
"""

from badgeline.kiosk.config import KioskSettings
from badgeline.kiosk.errors import (
    KioskError,
    NotReprintable,
    OutboxCorrupt,
    OutboxInUse,
    OutboxWriteError,
    ScanInvalid,
    UnknownScan,
)
from badgeline.kiosk.kiosk import Kiosk
from badgeline.kiosk.records import TERMINAL_JOB_STATES, Delivery, Kind, ScanStatus, ScanTicket
from badgeline.kiosk.salvage import SalvageReport

__all__ = [
    "TERMINAL_JOB_STATES",
    "Delivery",
    "Kind",
    "Kiosk",
    "KioskError",
    "KioskSettings",
    "NotReprintable",
    "OutboxCorrupt",
    "OutboxInUse",
    "OutboxWriteError",
    "SalvageReport",
    "ScanInvalid",
    "ScanStatus",
    "ScanTicket",
    "UnknownScan",
]
