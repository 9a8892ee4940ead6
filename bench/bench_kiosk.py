"""Scan to badge through the kiosk library, beside a raw API client, on an idle fleet.

    .venv/bin/python bench/bench_kiosk.py [--scans 100] [--warmup 5]

A benchmark, not a test: it prints figures and asserts nothing. A whole venue runs
as real processes (`LocalVenue`: coordinator with embedded Redis, three emulators,
three agents, each agent's printer link through a relay that notes the badge's first
byte: bench_scan_to_print.py). One scan at a time, the next once the previous badge
is out, so the fleet is idle at every scan; the scans alternate between the two
clients, and go to the printers in turn:

- kiosk library: `Kiosk.submit()` (the scan fsynced in its SQLite outbox, on this
  machine's disk), then its deliverer thread uploads the badge and submits the job;
- raw client: what a kiosk written from docs/api.md does, on one kept-alive
  http.client connection: `PUT /v1/artifacts/{sha256}.pdf`, then `POST /v1/jobs`.

Each scan has a badge PDF of its own (each upload is checked by the coordinator).
Per scan, from the moment of the scan: `returned` (submit returned: the library's
outbox commit; the raw client's 201), `first byte` (the badge's first byte at the
relay in front of the printer) and `badge out` (the emulator's `/printed` row).
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

# Run from a checkout without installing: make `badgeline` (and this folder) importable.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scan_to_print import (
    FirstByteRelay,
    percentile,
    printed_at,
    start_relays,
    start_venue,
)

from badgeline.kiosk import Kiosk
from badgeline.localvenue import LocalVenue
from badgeline.samples import sample_badge_pdf

POLL_S = 0.002
Timings = tuple[float, float, float]  # returned, first byte, badge out (ms after the scan)


class RawClient:
    """A kiosk written from docs/api.md: upload, submit, one kept-alive connection."""

    def __init__(self, venue: LocalVenue) -> None:
        self.connection = http.client.HTTPConnection("127.0.0.1", venue.coordinator_port)
        self.headers = {"Authorization": f"Bearer {venue.kiosk_token}"}

    def call(self, method: str, path: str, body: bytes, content_type: str) -> dict[str, str]:
        self.connection.request(method, path, body=body,
                                headers={**self.headers, "Content-Type": content_type})  # fmt: skip
        response = self.connection.getresponse()
        answer: dict[str, str] = json.loads(response.read())
        if response.status >= 300:
            raise RuntimeError(f"{method} {path}: {response.status} {answer}")
        return answer

    def scan(self, attendee_id: str, pdf: bytes, printer_id: str) -> str:
        sha = hashlib.sha256(pdf).hexdigest()
        ref = self.call("PUT", f"/v1/artifacts/{sha}.pdf", pdf, "application/pdf")["ref"]
        job = {"attendee_id": attendee_id, "badge_pdf_ref": ref, "printer_target": printer_id,
               "priority": 100, "idempotency_key": "raw-" + os.urandom(12).hex()}  # fmt: skip
        return self.call("POST", "/v1/jobs", json.dumps(job).encode(), "application/json")[
            "job_id"]  # fmt: skip


def wait_for(value: Callable[[], object], what: str, timeout_s: float = 30) -> object:
    deadline = time.monotonic() + timeout_s
    while (found := value()) is None:
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(POLL_S)
    return found


def printed_anywhere(venue: LocalVenue, job_id: str) -> tuple[str, float] | None:
    """(printer, time) the badge came out, on whichever printer printed it: a loaded
    machine can miss heartbeats, and a failover moves a badge to another printer."""
    for printer_id in venue.printer_ids:
        if (at := printed_at(venue, printer_id, job_id)) is not None:
            return printer_id, at
    return None


def out_of_printer(venue: LocalVenue, relays: dict[str, FirstByteRelay], job_id: str,
                   scanned: float) -> tuple[float, float]:  # fmt: skip
    found = wait_for(lambda: printed_anywhere(venue, job_id), f"{job_id} to print")
    assert isinstance(found, tuple)
    printer_id, out = found
    first = relays[printer_id].first_job_start_after(scanned)
    assert first is not None
    return (first - scanned) * 1000, (out - scanned) * 1000


def through_kiosk(kiosk: Kiosk, venue: LocalVenue, relays: dict[str, FirstByteRelay],
                  printer_id: str, attendee_id: str, pdf: bytes) -> Timings:  # fmt: skip
    scanned = time.time()
    ticket = kiosk.submit(attendee_id, pdf, printer_id)
    returned = time.time()
    job_id = wait_for(lambda: kiosk.status(ticket, refresh=False).job_id, "the delivery")
    first, out = out_of_printer(venue, relays, str(job_id), scanned)
    return (returned - scanned) * 1000, first, out


def through_raw(raw: RawClient, venue: LocalVenue, relays: dict[str, FirstByteRelay],
                printer_id: str, attendee_id: str, pdf: bytes) -> Timings:  # fmt: skip
    scanned = time.time()
    job_id = raw.scan(attendee_id, pdf, printer_id)
    returned = time.time()
    first, out = out_of_printer(venue, relays, job_id, scanned)
    return (returned - scanned) * 1000, first, out


def report(name: str, values: list[float]) -> None:
    p50, p99 = percentile(values, 0.50), percentile(values, 0.99)
    print(f"  {name:<24} p50 {p50:7.1f} ms   p99 {p99:7.1f} ms"
          f"   mean {statistics.mean(values):7.1f}   max {max(values):7.1f}")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scans", type=int, default=100, help="measured scans per client")
    parser.add_argument("--warmup", type=int, default=5, help="scans per client not measured")
    args = parser.parse_args()
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    results: dict[str, list[Timings]] = {"kiosk library": [], "raw client": []}
    # The outbox on this machine's disk, as a kiosk's would be (not a tmpfs).
    with tempfile.TemporaryDirectory(prefix="bench-kiosk-", dir=Path.cwd()) as root:
        venue = LocalVenue(Path(root), extra_coordinator_config={"mdns": False})
        relays = start_relays(venue)
        try:
            start_venue(venue, relays)
            kiosk = Kiosk(coordinator_urls=venue.url, token=venue.kiosk_token,
                          outbox_path=Path(root) / "kiosk" / "outbox.sqlite3")  # fmt: skip
            raw = RawClient(venue)
            for n in range(2 * (args.warmup + args.scans)):
                printer_id = venue.printer_ids[n % len(venue.printer_ids)]
                attendee = f"A-KB-{n:05d}"
                pdf = sample_badge_pdf(attendee, f"Bench Scan {n}", "Kiosk Library Ltd")
                if n % 2 == 0:
                    timing = through_kiosk(kiosk, venue, relays, printer_id, attendee, pdf)
                    results["kiosk library"].append(timing)
                else:
                    timing = through_raw(raw, venue, relays, printer_id, attendee, pdf)
                    results["raw client"].append(timing)
            kiosk.close()
        finally:
            venue.stop()
    print(f"\n{args.scans} scans per client, alternating, one at a time on an idle fleet of"
          f" {len(venue.printer_ids)} (first {args.warmup} of each not counted)")  # fmt: skip
    for client, timings in results.items():
        measured = timings[args.warmup :]
        print(client)
        report("submit returned", [t[0] for t in measured])
        report("scan → first byte", [t[1] for t in measured])
        report("scan → badge out", [t[2] for t in measured])
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
