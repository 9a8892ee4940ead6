"""Identifier shapes shared by the kiosk, the coordinator and the agents."""

from __future__ import annotations

import re

PRINTER_ID_PATTERN = r"^printer-[a-z0-9]{1,16}$"
POOL_NAME_PATTERN = r"^[a-z0-9][a-z0-9-]{0,31}$"
# A target names one printer, a pool of printers, or lets the coordinator pick.
PRINTER_TARGET_PATTERN = r"^(printer-[a-z0-9]{1,16}|pool:[a-z0-9][a-z0-9-]{0,31}|auto)$"
# Attendee ids come from the registration system; keep them log- and key-safe.
ATTENDEE_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:@-]*$"
IDEMPOTENCY_KEY_PATTERN = r"^[\x21-\x7e]+$"  # printable ASCII, no spaces
# Job ids are minted by the coordinator (`job_` + 16 hex digits). Checking the
# shape keeps a caller from naming another key of a job (`<id>:history`).
JOB_ID_PATTERN = r"^job_[0-9a-f]{16}$"

_PRINTER_ID = re.compile(PRINTER_ID_PATTERN)
_JOB_ID = re.compile(JOB_ID_PATTERN)


def is_printer_id(value: str) -> bool:
    return _PRINTER_ID.match(value) is not None


def is_job_id(value: str) -> bool:
    return _JOB_ID.match(value) is not None


def pool_of_target(target: str) -> str | None:
    """`pool:front` -> `front`; `auto` -> `default`; a printer id -> None."""
    if target == "auto":
        return "default"
    if target.startswith("pool:"):
        return target.removeprefix("pool:")
    return None
