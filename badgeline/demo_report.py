"""What `badgeline demo` tells the person running it: where to look, every token
it made and what each is for, and, when badges do not print in time, which
printers hold them and what to run."""

from __future__ import annotations

import collections
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from badgeline.localvenue import HttpStatusError, LocalVenue

MAX_LISTED = 5  # attendees named per printer in the timeout report


def cli_command() -> str:
    """How to call `badgeline` from here: the entry point beside this Python (e.g.
    `.venv/bin/badgeline` in a checkout set up by ./dev), else `badgeline`."""
    entry = Path(sys.executable).parent / "badgeline"
    if not entry.exists():
        return "badgeline"
    try:
        return str(entry.relative_to(Path.cwd()))
    except ValueError:
        return str(entry)


def operator_env(venue: LocalVenue) -> str:
    return f"BADGELINE_URL={venue.url} BADGELINE_TOKEN={venue.operator_token}"


def agent_status_url(venue: LocalVenue, printer_id: str) -> str | None:
    """The agent's status page: its pinned port, else the one its log says it bound."""
    slot = venue.printers[printer_id]
    if slot.status_port:
        return f"http://127.0.0.1:{slot.status_port}"
    log = venue.root / "logs" / f"agent-{printer_id}.log"
    url = None
    for line in log.read_text(errors="replace").splitlines() if log.exists() else []:
        if '"status_serving"' in line:  # the last one is this run's: the log appends
            try:
                url = json.loads(line).get("url")
            except ValueError:
                continue
    return url


def _aligned(rows: Sequence[tuple[str, ...]], indent: str) -> list[str]:
    widths = [max(len(row[n]) for row in rows) for n in range(len(rows[0]) - 1)]
    return [
        (indent + "  ".join(cell.ljust(width) for cell, width in zip(row[:-1], widths, strict=True))
         + "  " + row[-1]).rstrip()
        for row in rows
    ]  # fmt: skip


def where_to_look(venue: LocalVenue, paused: list[str]) -> str:
    """The block printed once the venue runs: URLs, tokens, printers, a first command."""
    cli = cli_command()
    lines = _aligned([
        ("dashboard", f"{venue.url}/", "(sign in with the operator token)"),
        ("API", venue.url, f"(OpenAPI: {venue.url}/v1/openapi.json)"),
        ("badge PNGs", f"{venue.badges_dir}/<printer>/", ""),
        ("logs", f"{venue.root / 'logs'}/", ""),
    ], "  ")  # fmt: skip
    lines += ["", "  tokens made for this run (the coordinator's config keeps only their SHA-256):"]
    lines += _aligned([
        ("operator", venue.operator_token, "operator CLI (BADGELINE_TOKEN) and dashboard sign-in"),
        ("kiosk", venue.kiosk_token, "submitting jobs: PUT /v1/artifacts/…, POST /v1/jobs"),
        *((slot.printer_id, slot.token, f"agent of {slot.printer_id} only "
           f"(in agent-{slot.printer_id}.toml)") for slot in venue.printers.values()),
    ], "    ")  # fmt: skip
    lines += ["", "  printers (badges out at the emulator; the agent's status page):"]
    lines += _aligned([
        (printer_id, f"{venue.emulator_url(printer_id)}/printed",
         f"{agent_status_url(venue, printer_id) or '(status port in its log)'}/status",
         "PAUSED" if printer_id in paused else "")
        for printer_id in venue.printer_ids
    ], "    ")  # fmt: skip
    lines += ["", f"  try:  {operator_env(venue)} {cli} printers"]
    for printer_id in paused:
        lines += ["", f"  {printer_id} is paused ({_shown(venue.root)} keeps a pause from one run "
                  "to the next): its badges wait until",
                  f"        {operator_env(venue)} {cli} resume {printer_id}"]  # fmt: skip
    return "\n".join(lines)


def paused_printers(venue: LocalVenue) -> list[str]:
    return sorted(p["printer_id"] for p in venue.api("GET", "/v1/printers")["items"]
                  if p.get("paused"))  # fmt: skip


def not_printed_report(venue: LocalVenue, job_ids: list[str], timeout_s: float) -> str:
    """Why `--once` gave up: each printer still holding badges, its state, the badges
    (attendee and job state), and what to run. Asks the coordinator, which still runs."""
    printed = collections.Counter(row["job_id"] for row in venue.printed_rows())
    missing = [job_id for job_id in job_ids if not printed[job_id]]
    head = f"{len(missing)} of {len(job_ids)} badges did not print within {timeout_s:g} s"
    try:
        printers = {p["printer_id"]: p for p in venue.api("GET", "/v1/printers")["items"]}
        jobs = [venue.job(job_id) for job_id in missing]
    except (OSError, HttpStatusError, ValueError) as error:  # it stopped answering
        return f"{head}; the coordinator does not answer ({error}): see {venue.root / 'logs'}/"
    waiting: dict[str, list[str]] = collections.defaultdict(list)
    for job in jobs:
        waiting[job["printer_id"]].append(f"{job['attendee_id']} ({job['state']})")
    rows = []
    for printer_id in sorted(waiting):
        printer = printers.get(printer_id, {})
        state = "paused" if printer.get("paused") else printer.get("state", "unknown")
        badges = waiting[printer_id]
        more = f", and {len(badges) - MAX_LISTED} more" if len(badges) > MAX_LISTED else ""
        rows.append((printer_id, state, f"{len(badges)} waiting: "
                     f"{', '.join(badges[:MAX_LISTED])}{more}"))  # fmt: skip
    lines = [head + ":", *_aligned(rows, "  ")]
    paused = [row[0] for row in rows if row[1] == "paused"]
    cli = cli_command()
    out = _shown(venue.root)
    if paused:
        names = " and ".join(paused)
        lines += [
            f"{names} {'is' if len(paused) == 1 else 'are'} paused, and {out} keeps a pause "
            "from one run to the next. To print",
            f"{'its' if len(paused) == 1 else 'their'} badges, run `{cli} demo --out {out}` "
            "(without --once) and, while it runs,",
            "with the URL and operator token it prints:",
            *(f"  BADGELINE_URL=… BADGELINE_TOKEN=… {cli} resume {printer_id}"
              for printer_id in paused),
            f"or delete {out} to start from nothing.",
        ]  # fmt: skip
    if len(paused) < len(rows):
        lead = "for the others, see" if paused else "see"
        lines.append(f"{lead} the agents' logs in {out}/logs/")
    return "\n".join(lines)


def _shown(path: Path) -> str:
    """`path` as the person typed it, relative to where they are when it is below."""
    try:
        return os.path.relpath(path) if path.is_relative_to(Path.cwd()) else str(path)
    except ValueError:
        return str(path)
