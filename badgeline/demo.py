"""`badgeline demo`: a venue on this machine printing sample badges.

Brings up the coordinator (with its embedded Redis), three emulated printers with
three agents, then plays a kiosk: uploads generated badge PDFs and submits one job
per attendee. `--once` waits until every badge has printed and exits with a
reconciliation counted at the printers.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import secrets
import signal
import sys
import time
from pathlib import Path
from typing import Any

from badgeline.localvenue import LocalVenue, wait_until

FIRST_NAMES = ("Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Frances", "Ken",
               "Margaret", "Niklaus", "Radia", "Tim")  # fmt: skip
COMPANIES = ("Analytical Engines", "Compiler Works", "Bletchley Labs", "Shortest Path Inc",
             "Liskov & Co", "TeX Press")  # fmt: skip


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--once", action="store_true",
        help="exit when every badge has printed, with a reconciliation summary",
    )  # fmt: skip
    parser.add_argument("--badges", type=int, default=36, help="how many badges to submit")
    parser.add_argument("--out", type=Path, default=Path("demo-out"), help="working directory")
    parser.add_argument("--port", type=int, default=0, help="coordinator port (0: a free one)")
    parser.add_argument("--timeout", type=float, default=180, help="--once gives up after this")


def submit_badges(venue: LocalVenue, count: int, run_tag: str) -> list[str]:
    """Upload and submit `count` sample badges; `run_tag` makes this run's scans its own.

    The demo's directory keeps the venue's Redis between runs, like a real venue
    keeps its state: a second run is a new check-in day, so its scans must not
    reuse the first run's idempotency keys (the PDFs differ, so that would be a
    409 conflict; the same PDFs would be duplicates printed the day before).
    """
    from badgeline.samples import sample_badge_pdf

    job_ids = []
    targets = ["auto", *venue.printer_ids]
    for n in range(count):
        attendee = f"A-{1001 + n}"
        name = f"{FIRST_NAMES[n % len(FIRST_NAMES)]} #{n + 1}"
        pdf = sample_badge_pdf(attendee, name, COMPANIES[n % len(COMPANIES)])
        sha = hashlib.sha256(pdf).hexdigest()
        venue.api("PUT", f"/v1/artifacts/{sha}.pdf", pdf, venue.kiosk_token)
        job = venue.api("POST", "/v1/jobs", {
            "attendee_id": attendee, "badge_pdf_ref": f"artifact://{sha}.pdf",
            "printer_target": targets[n % len(targets)],
            "priority": 10 if n % 9 == 0 else 100,  # a few VIPs jump the line
            "idempotency_key": f"demo-{run_tag}-scan-{attendee}",
        }, venue.kiosk_token)  # fmt: skip
        job_ids.append(job["job_id"])
    return job_ids


def reconcile(venue: LocalVenue, job_ids: list[str]) -> dict[str, Any]:
    prints = collections.Counter(row["job_id"] for row in venue.printed_rows())
    return {
        "accepted": len(job_ids),
        "printed_once": sum(1 for j in job_ids if prints[j] == 1),
        "printed_more_than_once": sorted(j for j in job_ids if prints[j] > 1),
        "not_printed": sorted(j for j in job_ids if prints[j] == 0),
    }


def _print_where_to_look(venue: LocalVenue) -> None:
    print(f"\n  API:          {venue.url}   (OpenAPI: {venue.url}/v1/openapi.json)")
    print(f"  operator:     Authorization: Bearer {venue.operator_token}")
    print(f"  badge PNGs:   {venue.badges_dir}/<printer>/")
    print(f"  logs:         {venue.root / 'logs'}/")
    for printer_id in venue.printer_ids:
        print(f"  {printer_id}:    emulator control {venue.emulator_url(printer_id)}/printed")


def run(args: argparse.Namespace) -> int:
    venue = LocalVenue(args.out, coordinator_port=args.port)
    print(f"badgeline demo: starting a venue in {venue.root} …")
    try:
        return _run(venue, args)
    except (RuntimeError, TimeoutError) as error:
        # A part that would not start (a port in use), or badges that did not print
        # in time: what went wrong, with the part's own last log lines, no traceback.
        print(f"badgeline demo: {error}", file=sys.stderr)
        return 1
    finally:
        venue.stop()


def _run(venue: LocalVenue, args: argparse.Namespace) -> int:
    venue.start()
    started = time.monotonic()
    job_ids = submit_badges(venue, args.badges, run_tag=secrets.token_hex(4))
    print(f"  submitted {len(job_ids)} badges")
    _print_where_to_look(venue)
    if not args.once:
        print("\n  running; Ctrl-C to stop", flush=True)
        # sigwait only returns for a blocked signal: unblocked, Ctrl-C went to
        # Python's handler, which waited for sigwait to return, and it hung.
        stop_signals = {signal.SIGINT, signal.SIGTERM}
        signal.pthread_sigmask(signal.SIG_BLOCK, stop_signals)
        received = signal.sigwait(stop_signals)
        print(f"\n  {signal.Signals(received).name}: stopping the venue", flush=True)
        return 0
    wait_until(lambda: not reconcile(venue, job_ids)["not_printed"], args.timeout,
               "every badge to print")  # fmt: skip
    summary = reconcile(venue, job_ids)
    print(f"\n  all {summary['accepted']} badges printed in "
          f"{time.monotonic() - started:.1f} s; reconciliation at the printers:")  # fmt: skip
    for key, value in summary.items():
        print(f"    {key}: {value if isinstance(value, int) else len(value)}")
    return 0 if not summary["printed_more_than_once"] else 1
