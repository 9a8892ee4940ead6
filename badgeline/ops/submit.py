"""`badgeline submit FILE.pdf --printer TARGET --attendee ID` (as lp): upload the badge
PDF to the artifact store (`PUT /v1/artifacts/<sha256>.pdf`, where the coordinator
checks it against the badge rules) and submit the job (`POST /v1/jobs`); print the
job id. With --wait, wait until the job is printed, failed or canceled and say which.

The job's idempotency key is drawn once per run (or given with --idempotency-key):
an answer lost on the way back is asked for again with the same key, which the
coordinator answers with the job it made, never a second badge."""

from __future__ import annotations

import argparse
import hashlib
import secrets
import sys
import time
from pathlib import Path
from typing import Any

from badgeline.ops.client import EXIT_REFUSED, EXIT_UNREACHABLE, EXIT_USAGE, OpsClient, OpsError
from badgeline.ops.command import add_common_options, execute

# The API's fields by the flag that fills them: a refusal names what was typed.
FLAGS = {"attendee_id": "--attendee", "printer_target": "--printer", "priority": "--priority",
         "idempotency_key": "--idempotency-key", "badge_pdf_ref": "FILE"}  # fmt: skip
FINISHED = ("printed", "failed", "canceled")
PDF_MAGIC = b"%PDF-"
# How long --wait waits without --timeout, and how often it looks.
DEFAULT_WAIT_S = 300.0
POLL_S = 0.5
# One call's answer never waits longer than this, whatever the wait.
CALL_TIMEOUT_S = 10.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common_options(
        parser,
        timeout_help="without --wait: seconds to wait for each answer "
        "(default: 10); with --wait: for the outcome (default: 300)",
    )
    parser.add_argument("file", type=Path, metavar="FILE.pdf", help="the badge, as a PDF")
    parser.add_argument("--printer", required=True, metavar="TARGET",
                        help="a printer id, pool:<name> or auto")  # fmt: skip
    parser.add_argument("--attendee", required=True, metavar="ID", help="the attendee's id")
    parser.add_argument("--priority", type=int, metavar="N",
                        help="0-1000, lower prints sooner (default: 100)")  # fmt: skip
    parser.add_argument("--idempotency-key", metavar="KEY",
                        help="names this badge (8-80 printable characters): the same KEY "
                             "again never prints a second one (default: a new one)")  # fmt: skip
    parser.add_argument("--wait", action="store_true",
                        help="wait until the job is printed, failed or canceled; with "
                             "--timeout S at most S seconds (default: 300)")  # fmt: skip


def _badge(path: Path) -> bytes:
    try:
        pdf = path.read_bytes()
    except OSError as error:
        raise OpsError(f"cannot read {path}: {error.strerror or error}", EXIT_USAGE) from None
    if not pdf.startswith(PDF_MAGIC):
        raise OpsError(f"{path} is not a PDF (it does not start with %PDF-): give the badge "
                       "as a PDF file", EXIT_USAGE)  # fmt: skip
    return pdf


def _with_one_retry(client: OpsClient, call: Any, again_hint: str) -> Any:
    """Call; if the answer was lost (the request may have been done), call once more:
    every call here is idempotent (content-addressed upload, the job's key)."""
    try:
        return call()
    except OpsError as lost:
        if lost.exit_code != EXIT_UNREACHABLE:
            raise
    try:
        return call()
    except OpsError as error:
        if error.exit_code != EXIT_UNREACHABLE:
            raise
        raise OpsError(f"{error}; {again_hint}", EXIT_UNREACHABLE) from None


def fetch(client: OpsClient, args: argparse.Namespace) -> Any:
    pdf = _badge(args.file)
    name = hashlib.sha256(pdf).hexdigest() + ".pdf"
    try:
        stored = _with_one_retry(
            client,
            lambda: client.put(f"/v1/artifacts/{name}", pdf, "application/pdf"),
            "submit it again",
        )
    except OpsError as refused:
        # A badge that breaks a badge rule (badge_rejected: what to fix) stops here.
        raise OpsError(f"{args.file}: {refused}", refused.exit_code) from None
    key = args.idempotency_key or "cli-" + secrets.token_hex(8)
    body: dict[str, Any] = {"attendee_id": args.attendee, "badge_pdf_ref": stored["ref"],
                            "printer_target": args.printer, "idempotency_key": key}  # fmt: skip
    if args.priority is not None:
        body["priority"] = args.priority
    accepted = _with_one_retry(
        client,
        lambda: client.post("/v1/jobs", body),
        f"the job may have been accepted: run the same command with --idempotency-key {key} "
        "to finish it without a second badge",
    )
    answer: dict[str, Any] = {"submitted": accepted}
    if args.wait:
        # The job exists now: a wait that ends without an outcome still prints its id.
        try:
            answer["job"] = _wait(client, accepted["job_id"], args.wait_s)
        except OpsError as error:
            answer["wait_error"] = {"message": str(error), "exit_code": error.exit_code}
    return answer


def _wait(client: OpsClient, job_id: str, wait_s: float) -> dict[str, Any]:
    deadline = time.monotonic() + wait_s
    while True:
        job: dict[str, Any] = client.get(f"/v1/jobs/{job_id}")
        if job["state"] in FINISHED:
            return job
        if time.monotonic() >= deadline:
            raise OpsError(
                f"job {job_id} is still {job['state']} on {job['printer_id']} after "
                f"{wait_s:g} s (see badgeline job {job_id}; the job stays in line)"
            )
        time.sleep(POLL_S)


def render(answer: Any, args: argparse.Namespace) -> str:
    submitted = answer["submitted"]
    job_id, state, printer = submitted["job_id"], submitted["state"], submitted["printer_id"]
    if submitted["duplicate"]:
        where = f"already submitted: {state} on {printer}"
    elif state == "parked":
        where = f"parked: {printer} is dead and no peer can take it; it prints once one can"
    else:
        where = f"{state} on {printer}, {submitted['position']} job(s) ahead"
    lines = [job_id, where]
    if "job" in answer:
        lines.append(outcome(answer["job"]))
    return "\n".join(lines)


def outcome(job: dict[str, Any]) -> str:
    state, printer = job["state"], job["printer_id"]
    if state == "printed":
        flagged = " (flagged possible_duplicate)" if job["possible_duplicate"] else ""
        return f"printed on {printer}{flagged}"
    if state == "failed":
        why = job.get("failure_reason") or "failed"
        detail = f": {job['last_error']}" if job.get("last_error") else ""
        good = " (for good: fix the badge and submit it again)" if job["failed_for_good"] else ""
        return f"failed on {printer}: {why}{detail}{good}"
    last = job["history"][-1] if job["history"] else {}
    return f"canceled ({last.get('reason') or 'canceled'})"


def verdict(answer: Any, args: argparse.Namespace) -> int:
    failed = answer.get("wait_error")
    if failed is not None:  # one line on stderr, as every error; the id is on stdout
        print(f"badgeline {args.command}: {failed['message']}", file=sys.stderr)
        return int(failed["exit_code"])
    job = answer.get("job")
    return EXIT_REFUSED if job is not None and job["state"] != "printed" else 0


def run(args: argparse.Namespace) -> int:
    # --timeout S: without --wait each answer's wait (default 10 s); with --wait the
    # wait for the outcome (default 300 s), each answer waiting at most 10 s of it.
    given = args.timeout
    args.wait_s = given if given is not None else DEFAULT_WAIT_S
    if given is None:
        args.timeout = CALL_TIMEOUT_S
    elif args.wait:
        args.timeout = min(given, CALL_TIMEOUT_S)
    return execute(args, fetch, render, verdict, flags=FLAGS)
