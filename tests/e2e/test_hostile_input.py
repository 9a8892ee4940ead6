"""Nothing a kiosk sends may break printing, through real processes.

Each hostile badge reference or PDF is sent between good badges, to one
printer. For each: the agent process stays up (the same one, never
restarted), the good badges come out exactly once (counted at the emulator),
the bad job ends `failed` with a classified reason, soon (its permanent
reasons at the first attempt), and every job accepted ends in a final state.
References that can never be used are refused at acceptance instead (422).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from badgeline import samples
from badgeline.localvenue import HttpStatusError, wait_until
from badgeline.protocol.failures import is_permanent
from tests.agent.hostile_server import ThreadedHostileServer
from tests.e2e.conftest import VenueFactory
from tests.e2e.venue import E2E_AGENT_SETTINGS, E2EVenue, prints_by_job, wait_until_printed

PRINTER = "printer-a"
MAX_ATTEMPTS = 2
# Short bounds, so that the transient failures (a server that trickles, or never
# answers) use up their attempts in seconds.
AGENT = {"badge_budget_s": 2.0, "fetch_timeout_s": 1.0}
COORDINATOR = {"max_attempts": MAX_ATTEMPTS, "retry_backoff_unit_s": 0.1}


@pytest.fixture
def hostile() -> Iterator[ThreadedHostileServer]:
    server = ThreadedHostileServer()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def venue(start_venue: VenueFactory, tmp_path: Path) -> E2EVenue:
    # The agent reads badge files only from its Pi's folder for them.
    sources = {"badge_file_roots": [str(tmp_path / "pi")], "badge_http_hosts": ["127.0.0.1:*"]}
    return start_venue(
        printer_ids=(PRINTER,), extra_coordinator_config=COORDINATOR,
        agent_settings={**E2E_AGENT_SETTINGS, **AGENT, **sources},
    )  # fmt: skip


def hostile_files(folder: Path) -> dict[str, tuple[str, str]]:
    """Badge references on the Pi that must fail: name -> (ref, expected reason)."""
    folder.mkdir(parents=True)
    fifo = folder / "fifo.pdf"
    os.mkfifo(fifo)
    (folder / "folder.pdf").mkdir()
    (folder / "zero.pdf").symlink_to("/dev/zero")  # a device that never ends
    (folder / "a.pdf").symlink_to(folder / "b.pdf")
    (folder / "b.pdf").symlink_to(folder / "a.pdf")
    pdfs = {
        "encrypted": (samples.encrypted_badge_pdf(), "encrypted"),
        "not a PDF": (samples.not_a_pdf(), "not_a_pdf"),
        "500 pages": (samples.many_pages_badge_pdf(500), "too_complex"),
        "giant page": (samples.giant_page_pdf(), "page_size"),
        "fonts not embedded": (samples.core_font_badge_pdf(), "font_not_embedded"),
        "decompression bomb": (samples.decompression_bomb_pdf(), "too_complex"),
    }
    refs = {
        "FIFO": (fifo.as_uri(), "not_a_file"),
        "directory": ((folder / "folder.pdf").as_uri(), "not_a_file"),
        "device": ((folder / "zero.pdf").as_uri(), "not_allowed"),  # a symlink out of the root
        "symlink loop": ((folder / "a.pdf").as_uri(), "not_a_file"),
        "missing file": ((folder / "nobody.pdf").as_uri(), "not_found"),
    }
    for name, (pdf, reason) in pdfs.items():
        path = folder / (name.replace(" ", "-") + ".pdf")
        path.write_bytes(pdf)
        refs[name] = (path.as_uri(), reason)
    return refs


def hostile_servers(url: str) -> dict[str, tuple[str, str]]:
    return {
        "1 byte a second": (f"{url}/trickle.pdf", "fetch_timeout"),
        "never answers": (f"{url}/silent.pdf", "fetch_timeout"),
        "redirect loop": (f"{url}/loop.pdf", "refused"),
        "20 MiB stream": (f"{url}/flood.pdf", "too_large"),
        "lying Content-Length": (f"{url}/liar.pdf", "network"),
        "claims 10 GB": (f"{url}/huge.pdf", "too_large"),
    }


def agent_pid(venue: E2EVenue) -> int:
    process = venue.processes[f"agent-{PRINTER}"].process
    assert process is not None and process.poll() is None, venue.log_tail(f"agent-{PRINTER}")
    return process.pid


def test_hostile_references_and_pdfs_fail_their_own_job_and_nothing_else(
    venue: E2EVenue, hostile: ThreadedHostileServer, tmp_path: Path
) -> None:
    # GIVEN one printer's agent, a folder of hostile files on its Pi, a hostile server
    pid = agent_pid(venue)
    good_ref = venue.upload_badge(samples.sample_badge_pdf("A-GOOD"))
    cases = {**hostile_files(tmp_path / "pi"), **hostile_servers(hostile.url)}
    # WHEN each is sent, with a good badge behind it
    bad: dict[str, tuple[str, str]] = {}
    good: list[str] = []
    for number, (name, (ref, reason)) in enumerate(cases.items()):
        bad[venue.submit(PRINTER, f"att-bad-{number:03d}", ref)["job_id"]] = (name, reason)
        good.append(venue.submit(PRINTER, f"att-good-{number:03d}", good_ref)["job_id"])
    # THEN every good badge comes out exactly once
    wait_until_printed(venue, good, timeout_s=120)
    # AND every bad job ends failed with its classified reason, and never printed
    views = {job_id: _failed(venue, job_id) for job_id in bad}
    counts = prints_by_job(venue)
    assert all(counts[job_id] == 1 for job_id in good), counts
    for job_id, (name, reason) in bad.items():
        view = views[job_id]
        assert view["failure_reason"] == reason, (name, view["failure_reason"], view["last_error"])
        assert counts[job_id] == 0, name
        # a permanent reason at its first attempt; a transient one after max_attempts
        expected = 1 if is_permanent(view["failure_reason"]) else MAX_ATTEMPTS
        assert (view["attempts"], view["failed_for_good"]) == (
            expected,
            is_permanent(view["failure_reason"]),
        ), name
        # the reason is the agent's words: nothing the hostile source sent
        assert not any(mark in view["last_error"] for mark in ("%%", "xxx", "doctype")), name
    # AND it was the same agent throughout: it never exited for a job's sake
    assert agent_pid(venue) == pid
    status = venue.api("GET", "/v1/printers")["items"][0]
    assert status["state"] == "healthy", status


@pytest.mark.parametrize(
    "ref",
    [
        "file:///badges/x%00.pdf",
        "file:///badges/x\x00.pdf",
        "https://badges.example/x%0d%0a.pdf",
        "https://badges.example/x\r\n.pdf",
        "file:///badges/../etc/passwd.pdf",
    ],
)
def test_references_that_name_nothing_are_refused_at_acceptance(venue: E2EVenue, ref: str) -> None:
    with pytest.raises(HttpStatusError) as refused:
        venue.submit(PRINTER, "att-refused", ref)
    assert refused.value.status == 422
    assert refused.value.body["error"]["fields"][0]["loc"] == ["badge_pdf_ref"]


def _failed(venue: E2EVenue, job_id: str) -> Any:
    def failed() -> bool:
        return bool(venue.job(job_id)["state"] == "failed")

    wait_until(failed, 60, f"{job_id} to fail")
    return venue.job(job_id)
