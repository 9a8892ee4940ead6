"""Label printers end to end: real agents printing ZPL and Brother QL raster to the
emulator in that language, counted at the emulator. A Zebra's agent killed -9 while
badges flow loses none and prints none twice unflagged; a jammed Zebra's badges are
drained to a Brother QL in its pool and print there.

The emulator reads each Zebra label's `job <id>` footer back from its `^FD` field;
a Brother label is a picture only, so its prints are counted, and matched with the
jobs the coordinator says printed there.
"""

from __future__ import annotations

from typing import Any

from badgeline.localvenue import wait_until
from badgeline.samples import sample_badge_pdf
from tests.e2e.conftest import VenueFactory
from tests.e2e.venue import E2EVenue, printed_on, prints_by_job, submitted_job_id

ZEBRA, BROTHER = "printer-z", "printer-q"
EMULATORS = {
    ZEBRA: ["--language", "zpl", "--model", "ZD421"],
    BROTHER: ["--language", "brother-ql", "--media-width", "696", "--label-length", "1109"],
}
AGENTS: dict[str, dict[str, Any]] = {
    ZEBRA: {"printer": {"language": "zpl", "model": "ZD421"}, "labels": ["badges"]},
    BROTHER: {"printer": {"language": "brother_ql", "media": "62x100"}, "labels": ["badges"]},
}


def label_venue(start_venue: VenueFactory, printers: tuple[str, ...], **options: Any) -> E2EVenue:
    return start_venue(
        printer_ids=printers,
        emulator_args={p: EMULATORS[p] for p in printers},
        agent_settings_for={p: AGENTS[p] for p in printers},
        **options,
    )


def all_printed(venue: E2EVenue, job_ids: list[str], timeout_s: float) -> list[dict[str, Any]]:
    wait_until(lambda: all(venue.job(j)["state"] == "printed" for j in job_ids), timeout_s,
               "every job to be printed")  # fmt: skip
    return [venue.job(j) for j in job_ids]


def test_a_zebra_agent_killed_while_badges_flow_loses_none_and_flags_every_second_print(
    start_venue: VenueFactory,
) -> None:
    # GIVEN a Zebra (ZPL emulator) and its agent, and badges queued for it
    venue = label_venue(start_venue, (ZEBRA,))
    ref = venue.upload_badge(sample_badge_pdf("A-Z-0001", "Grace Hopper", "Labels Ltd"))
    jobs = [submitted_job_id(venue.submit(ZEBRA, f"A-Z-{n:04d}", ref)) for n in range(10)]
    # WHEN its agent is killed -9 twice while it prints, and started again each time
    for _ in range(2):
        out = len(printed_on(venue, ZEBRA))
        wait_until(lambda: len(printed_on(venue, ZEBRA)) > out, 30, "a badge out")  # noqa: B023
        venue.kill_agent(ZEBRA)
        venue.restart_agent(ZEBRA)
    records = all_printed(venue, jobs, timeout_s=60)
    # THEN every badge came out of the Zebra, read back by its job id footer, and one
    # that came out twice was flagged possible_duplicate (the kill fell in its window)
    counts = prints_by_job(venue)
    assert all(counts[job] >= 1 for job in jobs)
    twice = {job for job in jobs if counts[job] > 1}
    flagged = {r["job_id"] for r in records if r.get("possible_duplicate")}
    assert twice <= flagged
    views = {p["printer_id"]: p for p in venue.api("GET", "/v1/printers")["items"]}
    assert views[ZEBRA]["language"] == "zpl"
    assert views[ZEBRA]["confirmation"] == "host_status"


def test_a_jammed_zebra_s_badges_are_drained_to_a_brother_and_print_there(
    start_venue: VenueFactory,
) -> None:
    # GIVEN a pool of a Zebra and a Brother QL, the Zebra slow, badges queued on it
    venue = label_venue(start_venue, (ZEBRA, BROTHER),
                        extra_coordinator_config={"ack_grace_s": 2.0})  # fmt: skip
    ref = venue.upload_badge(sample_badge_pdf("A-J-0001", "Alan Turing", "Labels Ltd"))
    venue.set_speed(ZEBRA, 1500)
    jobs = [submitted_job_id(venue.submit(ZEBRA, f"A-J-{n:04d}", ref)) for n in range(6)]
    wait_until(lambda: venue.job(jobs[0])["state"] == "printing", 30, "the first on the head")
    # WHEN the Zebra jams (its cutter fault, only ~HQES tells)
    venue.set_fault(ZEBRA, "jam")
    wait_until(lambda: venue.printer_states().get(ZEBRA) == "dead", 30, "the Zebra dead")
    records = all_printed(venue, jobs, timeout_s=60)
    # THEN its queued badges were drained to the Brother and printed there
    on_brother = [r for r in records if r["printer_id"] == BROTHER]
    assert on_brother, "no badge moved from the jammed Zebra to the Brother"
    brother_out = len(printed_on(venue, BROTHER))
    assert brother_out >= len(on_brother)
    # AND at the printers, nothing is lost and nothing is out twice unflagged: the
    # Zebra's held label comes out when the jam is cleared (a Zebra keeps its labels)
    venue.set_fault(ZEBRA, "none")
    zebra_out = prints_by_job(venue)
    flagged = {r["job_id"] for r in records if r.get("possible_duplicate")}
    assert all(n <= 1 for job, n in zebra_out.items() if job is not None)
    assert len(jobs) <= sum(zebra_out[j] for j in jobs) + brother_out
    assert sum(zebra_out[j] for j in jobs) + brother_out <= len(jobs) + len(flagged)
