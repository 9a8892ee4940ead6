"""What a scan and a reprint request must be before the outbox keeps them, and the
records they become: each with the key made for it now, once.

A scan is checked with the coordinator's own job model (badgeline.protocol.job), so
one the coordinator would refuse for ever is refused at `submit`, not kept.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import uuid
from typing import Any

from pydantic import ValidationError

from badgeline.kiosk.errors import NotReprintable, ScanInvalid, UnknownScan
from badgeline.kiosk.records import Delivery, Kind, ScanRecord, ScanStatus, ScanTicket
from badgeline.protocol.ids import PRINTER_TARGET_PATTERN, is_job_id
from badgeline.protocol.job import PrintJob

Which = ScanTicket | ScanStatus | str
PdfSource = bytes | bytearray | memoryview | str | os.PathLike[str]
_TARGET = re.compile(PRINTER_TARGET_PATTERN)


def read_pdf(pdf: PdfSource, max_bytes: int) -> bytes:
    """The badge's bytes (read now from a path: the file may go after `submit`)."""
    if isinstance(pdf, bytes | bytearray | memoryview):
        data = bytes(pdf)
    else:
        try:
            with open(pdf, "rb") as file:
                data = file.read(max_bytes + 1)
        except OSError as error:
            raise ScanInvalid(f"pdf: cannot read {pdf}: {error.strerror or error}") from None
    if not data.startswith(b"%PDF-"):
        raise ScanInvalid("pdf: not a PDF (it does not start with %PDF-)")
    if len(data) > max_bytes:
        raise ScanInvalid(f"pdf: over {max_bytes} bytes, the largest badge the coordinator takes")
    return data


def new_scan(key_prefix: str, attendee_id: str, pdf: bytes, printer_target: str,
             priority: int) -> ScanRecord:  # fmt: skip
    sha256 = hashlib.sha256(pdf).hexdigest()
    key = f"{key_prefix}-{uuid.uuid4().hex}"
    try:
        job = PrintJob(attendee_id=attendee_id, badge_pdf_ref=f"artifact://{sha256}.pdf",
                       printer_target=printer_target, priority=priority,
                       idempotency_key=key)  # fmt: skip
    except ValidationError as error:
        raise ScanInvalid("; ".join(f"{'.'.join(map(str, e['loc'])) or 'scan'}: {e['msg']}"
                                    for e in error.errors())) from None  # fmt: skip
    return ScanRecord(
        0, "scan_" + secrets.token_hex(8), Kind.SCAN, job.attendee_id, job.printer_target,
        job.priority, key, sha256, None, None, Delivery.PENDING, None, None, None, None,
        None, 0.0, 0.0,
    )  # fmt: skip


def new_reprint(key_prefix: str, job_id: str, attendee_id: str, reason: str,
                printer_target: str | None, priority: int | None) -> ScanRecord:  # fmt: skip
    reason = reason.strip() if isinstance(reason, str) else ""
    if not 1 <= len(reason) <= 200:
        raise ScanInvalid("reason: say why the badge is printed again, in 1-200 characters")
    if printer_target is not None and not _TARGET.match(printer_target):
        raise ScanInvalid(f"printer_target: {printer_target!r} is not printer-…, pool:… or auto")
    if priority is not None and not (isinstance(priority, int) and 0 <= priority <= 1000):
        raise ScanInvalid("priority: an integer from 0 to 1000")
    # The reprint's request_id: made once, sent with every attempt, never the scan's key.
    request_id = f"{key_prefix}-reprint-{uuid.uuid4().hex}"
    return ScanRecord(
        0, "scan_" + secrets.token_hex(8), Kind.REPRINT, attendee_id, printer_target,
        priority, request_id, None, job_id, reason, Delivery.PENDING, None, None, None, None,
        None, 0.0, 0.0,
    )  # fmt: skip


def name(which: Which) -> str:
    return which.scan_id or "(a job)" if isinstance(which, ScanTicket | ScanStatus) else which


def job_to_reprint(which: Which, original: ScanRecord | None) -> str:
    """The job a reprint of `which` is of; NotReprintable before it has one."""
    if original is None:
        if isinstance(which, str) and is_job_id(which):
            return which  # a job of this kiosk the outbox has forgotten
        raise UnknownScan(f"no scan {name(which)} in this outbox")
    if original.delivery is Delivery.REFUSED or original.job_id is None:
        state = "was refused: submit the badge again" if original.delivery is Delivery.REFUSED \
            else "is not delivered yet: there is no job to reprint; wait for it"  # fmt: skip
        raise NotReprintable(f"scan {original.scan_id} {state}")
    return original.job_id


def status_of_job(job: dict[str, Any]) -> ScanStatus:
    """The status of a job this outbox does not hold, from the coordinator's answer."""
    return ScanStatus(
        None, Kind.REPRINT if job.get("reprint_of") else Kind.SCAN, str(job.get("attendee_id")),
        job.get("idempotency_key"), Delivery.ACCEPTED, job.get("job_id"), job.get("state"),
        job.get("printer_id"), None, None, job.get("reprint_of"), job.get("created_at"),
        job.get("updated_at"), job,
    )  # fmt: skip
