"""`badgeline demo`: a venue on this machine printing sample badges.

Brings up the coordinator (with its embedded Redis), three emulated printers with
three agents, then plays a kiosk: uploads generated badge PDFs and submits one job
per attendee. `--once` waits until every badge has printed and exits with a
reconciliation counted at the printers.
"""

from __future__ import annotations

import argparse
import collections
import errno
import hashlib
import secrets
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any

from badgeline.demo_report import not_printed_report, paused_printers, where_to_look
from badgeline.localvenue import HttpStatusError, LocalVenue, wait_until

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
    parser.add_argument("--port", type=_port, default=0, help="coordinator port (0: a free one)")
    parser.add_argument(
        "--emulator-port", type=_port, default=0, metavar="PORT",
        help="the emulators' first port; each printer takes two from it, ESC/POS then "
             "control (0: free ones)",
    )  # fmt: skip
    parser.add_argument(
        "--status-port", type=_port, default=0, metavar="PORT",
        help="the agents' first status port, one per printer from it (0: free ones)",
    )  # fmt: skip
    parser.add_argument("--timeout", type=float, default=180, help="--once gives up after this")


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port (0 to 65535)")
    return port


# What moves each part of the venue to other ports.
PORT_OPTIONS = {
    "coordinator": "another with --port (0: a free one)",
    "emulator": "others with --emulator-port (0: free ones)",
    "agent": "others with --status-port (0: free ones)",
}


def port_refusals(venue: LocalVenue) -> list[str]:
    """One line per port the venue cannot listen on, checked before anything starts:
    a part that finds its port taken exits, and until it does another process may
    answer in its place (a coordinator of another venue, refusing this one's tokens)."""
    refusals = []
    wanted: dict[int, str] = {}
    for port, part, what in venue.planned_ports():
        if port > 65535:  # the ports after a pinned first one run past the last
            refusals.append(f"port {port} (for {what}) is past 65535: choose {PORT_OPTIONS[part]}")
            continue
        if port in wanted:
            refusals.append(f"port {port} is wanted twice, by {wanted[port]} and by {what}: "
                            f"choose {PORT_OPTIONS[part]}")  # fmt: skip
            continue
        wanted[port] = what
        problem = _cannot_listen(port)
        if problem:
            refusals.append(f"port {port} {problem} (wanted by {what}): stop that process, "
                            f"or choose {PORT_OPTIONS[part]}")  # fmt: skip
    return refusals


def _cannot_listen(port: int) -> str | None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        # As the servers do: a port left in TIME_WAIT by the last run is free for them.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                return "is in use by another process"
            return f"cannot be listened on ({error.strerror})"
    return None


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


def run(args: argparse.Namespace) -> int:
    venue = LocalVenue(args.out, coordinator_port=args.port, emulator_port=args.emulator_port,
                       agent_status_port=args.status_port)  # fmt: skip
    refusals = port_refusals(venue)
    if refusals:
        for line in refusals:
            print(f"badgeline demo: {line}", file=sys.stderr)
        return 1
    print(f"badgeline demo: starting a venue in {venue.root} …")
    try:
        return _run(venue, args)
    except (RuntimeError, TimeoutError, HttpStatusError, OSError) as error:
        # A part that would not start (with its own last log lines), a coordinator
        # that stopped answering: what went wrong, no traceback.
        print(f"badgeline demo: {error}", file=sys.stderr)
        return 1
    finally:
        venue.stop()


def _run(venue: LocalVenue, args: argparse.Namespace) -> int:
    venue.start()
    started = time.monotonic()
    job_ids = submit_badges(venue, args.badges, run_tag=secrets.token_hex(4))
    print(f"  submitted {len(job_ids)} badges\n")
    print(where_to_look(venue, paused_printers(venue)), flush=True)
    if not args.once:
        print("\n  running; Ctrl-C to stop", flush=True)
        # sigwait only returns for a blocked signal: unblocked, Ctrl-C went to
        # Python's handler, which waited for sigwait to return, and it hung.
        stop_signals = {signal.SIGINT, signal.SIGTERM}
        signal.pthread_sigmask(signal.SIG_BLOCK, stop_signals)
        received = signal.sigwait(stop_signals)
        print(f"\n  {signal.Signals(received).name}: stopping the venue", flush=True)
        return 0
    try:
        wait_until(lambda: not reconcile(venue, job_ids)["not_printed"], args.timeout,
                   "every badge to print")  # fmt: skip
    except TimeoutError:
        print(f"badgeline demo: {not_printed_report(venue, job_ids, args.timeout)}",
              file=sys.stderr)  # fmt: skip
        return 1
    summary = reconcile(venue, job_ids)
    print(f"\n  all {summary['accepted']} badges printed in "
          f"{time.monotonic() - started:.1f} s; reconciliation at the printers:")  # fmt: skip
    for key, value in summary.items():
        print(f"    {key}: {value if isinstance(value, int) else len(value)}")
    return 0 if not summary["printed_more_than_once"] else 1
