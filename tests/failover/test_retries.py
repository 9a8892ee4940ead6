"""A print that fails is retried with a growing back-off, then failed and dead-lettered.

An agent acks `failed` only when no badge can have come out: the badge could not
be fetched or rendered, or the write to the printer failed. A printer fault after
the start grant (cover opened, jam) is acked `uncertain` instead, since the badge
may be out: that job is re-dispatched flagged possible_duplicate and costs no
attempt. So the failing print here is a badge whose server cannot be reached
(a transient failure: a permanent one, such as a PDF that does not exist, fails
at once): every attempt really goes to the agent, which acks it `failed`.
"""

from __future__ import annotations

import re

from badgeline.coordinator.store.embedded import free_port
from tests.failover.checks import check_printed_once, wait_all_printed, wait_for
from tests.failover.conftest import VenueFactory

UNIT_S = 0.25
MAX_ATTEMPTS = 4
JITTER = 0.2  # the coordinator spreads each delay by ± 20 %
RETRY_IN = re.compile(r"^print failed \(attempt (\d+)\): .*; retry in (\d+) ms$")


def test_failed_prints_back_off_then_fail_and_dead_letter_after_max_attempts(
    make_venue: VenueFactory, badge_pdf: bytes
) -> None:
    venue = make_venue(
        coordinator={"retry_backoff_unit_s": UNIT_S, "max_attempts": MAX_ATTEMPTS},
        printer_ids=("printer-a", "printer-b"),
    )
    # Nothing listens there: every fetch is refused, a network failure worth a retry.
    unreachable = f"http://127.0.0.1:{free_port()}/badges/att-missing.pdf"
    bad = venue.submit("printer-a", "att-missing", unreachable)["job_id"]
    good = venue.submit("printer-a", "att-good", venue.upload_badge(badge_pdf))["job_id"]

    wait_for(lambda: venue.job(bad)["state"] == "failed", 40, "the job to fail", venue)
    job = venue.job(bad)
    assert job["attempts"] == MAX_ATTEMPTS
    assert job["failure_reason"] == "network", job
    assert "could not be reached" in job["last_error"], job["last_error"]

    history = job["history"]
    backoffs = [(n, entry) for n, entry in enumerate(history) if entry["to"] == "retrying"]
    assert len(backoffs) == MAX_ATTEMPTS - 1, history
    delays_ms = []
    for attempt, (n, entry) in enumerate(backoffs, start=1):
        match = RETRY_IN.match(entry["reason"])
        assert match and int(match.group(1)) == attempt, entry
        delay_ms = int(match.group(2))
        nominal_ms = min(2**attempt * UNIT_S, 60) * 1000
        assert (1 - JITTER) * nominal_ms <= delay_ms <= (1 + JITTER) * nominal_ms, entry
        # Back in line no sooner than the back-off (both times from the Redis clock).
        back = history[n + 1]
        assert (back["to"], back["reason"]) == ("queued", "retry backoff over"), back
        assert back["at"] - entry["at"] >= delay_ms / 1000 - 0.002, (entry, back)
        delays_ms.append(delay_ms)
    assert delays_ms == sorted(delays_ms)
    assert history[-1]["to"] == "failed"
    assert history[-1]["reason"].startswith(f"print failed {MAX_ATTEMPTS} times, last: ")

    # Dead-lettered with its last error.
    dead = venue.api("GET", "/v1/dead-letters")["items"]
    assert [d["job_id"] for d in dead] == [bad]
    assert dead[0]["reason"] == history[-1]["reason"] and job["last_error"] in dead[0]["reason"]
    # The failing badge held up nothing, and never came out.
    wait_all_printed(venue, [good])
    check_printed_once(venue, [good])
