"""A kiosk process whose disk fills up between two scans (run by test_full_disk.py).

    python -m tests.kiosk.full_disk_kiosk OUTBOX COORDINATOR_URL BADGE_PDF

It keeps three scans, then tells the kernel to refuse any write that would make one
of its files bigger than the outbox's files are now (RLIMIT_FSIZE: a full disk, for
this process alone), is handed a large scan, gets the space back and keeps one more.
Each step is one JSON line on stdout. SIGXFSZ is ignored, as a full disk sends no
signal: the write fails instead, as with ENOSPC.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sys
from pathlib import Path

from badgeline.kiosk import Kiosk, OutboxWriteError

LARGE_SCAN_BYTES = 1024 * 1024


def say(**fields: object) -> None:
    print(json.dumps(fields), flush=True)


def main(outbox: Path, url: str, badge: Path) -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    pdf = badge.read_bytes()
    kiosk = Kiosk(coordinator_urls=url, token="any", outbox_path=outbox)
    for n in range(3):
        ticket = kiosk.submit(f"att_full_{n}", pdf, "printer-a")
        say(kept=ticket.attendee_id, key=ticket.idempotency_key)
    files = [outbox.with_name(outbox.name + suffix) for suffix in ("", "-wal", "-shm")]
    room = max(path.stat().st_size for path in files if path.exists())
    _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (room, hard))
    large = b"%PDF-1.4\n" + os.urandom(LARGE_SCAN_BYTES)  # more than any file has room for
    try:
        kiosk.submit("att_full_large", large, "printer-a")
        say(kept="att_full_large")
    except OutboxWriteError as error:
        say(refused="att_full_large", error=str(error))
    resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
    ticket = kiosk.submit("att_full_after", pdf, "printer-a")
    say(kept=ticket.attendee_id, key=ticket.idempotency_key)
    kiosk.close()
    say(closed=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]))
