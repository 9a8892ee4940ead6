"""Label printers end to end: real agents printing ZPL and Brother QL raster to the
emulator in that language, counted at the emulator. A Zebra's or a Brother's agent
killed -9 while badges flow loses none and prints none twice unflagged; a jammed Zebra's
badges are drained to a Brother QL in its pool and print there, and the label the Zebra
held comes out once the jam is cleared, flagged if it printed twice; a jammed ESC/POS
printer's badges are drained to a Zebra in its pool.

The emulator reads each Zebra label's `job <id>` footer back from its `^FD` field, and an
ESC/POS badge's from its text; a Brother label is a picture only, so its prints are
counted, and matched with the jobs the coordinator says printed there.
"""

from __future__ import annotations

from typing import Any

from badgeline.localvenue import http_json, wait_until
from badgeline.samples import sample_badge_pdf
from tests.e2e.conftest import VenueFactory
from tests.e2e.venue import E2EVenue, printed_on, prints_by_job, submitted_job_id

ZEBRA, BROTHER, EPSON = "printer-z", "printer-q", "printer-e"
EMULATORS = {
    ZEBRA: ["--language", "zpl", "--model", "ZD421"],
    BROTHER: ["--language", "brother-ql", "--media-width", "696", "--label-length", "1109"],
    EPSON: [],
}
AGENTS: dict[str, dict[str, Any]] = {
    ZEBRA: {"printer": {"language": "zpl", "model": "ZD421"}, "labels": ["badges"]},
    BROTHER: {"printer": {"language": "brother_ql", "media": "62x100"}, "labels": ["badges"]},
    EPSON: {"labels": ["badges"]},
}

# A job a killed agent had leased but not begun is leased again once its lease expires.
SHORT_LEASES = {"lease_ttl_s": 5.0}


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


def kill_twice_while_printing(venue: E2EVenue, printer_id: str) -> None:
    """Its agent killed -9, and started again, each time just after a badge came out."""
    for _ in range(2):
        out = len(printed_on(venue, printer_id))
        wait_until(lambda: len(printed_on(venue, printer_id)) > out, 30, "a badge out")  # noqa: B023
        venue.kill_agent(printer_id)
        venue.restart_agent(printer_id)


def idle(venue: E2EVenue, printer_id: str) -> bool:
    """The emulator holds no label, neither on its head nor waiting."""
    status = http_json("GET", venue.emulator_url(printer_id) + "/status")
    return not status["printing"] and status["queued"] == 0 and status["held_bytes"] == 0


def test_a_zebra_agent_killed_while_badges_flow_loses_none_and_flags_every_second_print(
    start_venue: VenueFactory,
) -> None:
    # GIVEN a Zebra (ZPL emulator) and its agent, and badges queued for it (a job the
    # killed agent had leased but not begun waits out its lease: 5 s, not 30)
    venue = label_venue(start_venue, (ZEBRA,), extra_coordinator_config=SHORT_LEASES)
    ref = venue.upload_badge(sample_badge_pdf("A-Z-0001", "Grace Hopper", "Labels Ltd"))
    jobs = [submitted_job_id(venue.submit(ZEBRA, f"A-Z-{n:04d}", ref)) for n in range(10)]
    # WHEN its agent is killed -9 twice while it prints, and started again each time
    kill_twice_while_printing(venue, ZEBRA)
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
    # WHEN the jam is cleared, the label the Zebra held comes out (a Zebra keeps its
    # labels through a fault and prints them after)
    held_on_zebra = not idle(venue, ZEBRA)
    zebra_before = {row["job_id"] for row in printed_on(venue, ZEBRA)}
    venue.set_fault(ZEBRA, "none")
    wait_until(lambda: idle(venue, ZEBRA), 30, "the Zebra to print what it held")
    came_out = [r["job_id"] for r in printed_on(venue, ZEBRA) if r["job_id"] not in zebra_before]
    assert held_on_zebra and came_out, "the Zebra held no label through its jam"
    # THEN a held label whose badge was printed on the Brother meanwhile is a second
    # print, and the coordinator flagged it possible_duplicate; and at the printers
    # nothing is lost and nothing is out twice unflagged
    flagged = {r["job_id"] for r in records if r.get("possible_duplicate")}
    brother_jobs = {r["job_id"] for r in on_brother}
    assert set(came_out) & brother_jobs <= flagged
    zebra_out = prints_by_job(venue)
    assert all(n <= 1 for job, n in zebra_out.items() if job is not None)
    assert len(jobs) <= sum(zebra_out[j] for j in jobs) + brother_out
    assert sum(zebra_out[j] for j in jobs) + brother_out <= len(jobs) + len(flagged)


def test_a_brother_agent_killed_while_badges_flow_loses_none_and_flags_every_second_print(
    start_venue: VenueFactory,
) -> None:
    # GIVEN a Brother QL (its emulator) and its agent, and badges queued for it
    venue = label_venue(start_venue, (BROTHER,), extra_coordinator_config=SHORT_LEASES)
    ref = venue.upload_badge(sample_badge_pdf("A-Q-0001", "Ada Lovelace", "Labels Ltd"))
    jobs = [submitted_job_id(venue.submit(BROTHER, f"A-Q-{n:04d}", ref)) for n in range(8)]
    # WHEN its agent is killed -9 twice while it prints, and started again each time
    kill_twice_while_printing(venue, BROTHER)
    records = all_printed(venue, jobs, timeout_s=60)
    # THEN every badge came out (a Brother label is a picture: counted), and only
    # badges flagged possible_duplicate (a kill fell in their window) came out twice
    wait_until(lambda: idle(venue, BROTHER), 30, "the Brother to finish")
    out = len(printed_on(venue, BROTHER))
    flagged = [r for r in records if r.get("possible_duplicate")]
    assert len(jobs) <= out <= len(jobs) + len(flagged)
    assert all(r["printer_id"] == BROTHER for r in records)


def test_a_jammed_escpos_printer_s_badges_are_drained_to_a_zebra_and_print_there(
    start_venue: VenueFactory,
) -> None:
    # GIVEN a pool of an ESC/POS receipt printer and a Zebra, badges queued on the
    # ESC/POS one, which is slow
    venue = label_venue(start_venue, (EPSON, ZEBRA),
                        extra_coordinator_config={"ack_grace_s": 2.0})  # fmt: skip
    ref = venue.upload_badge(sample_badge_pdf("A-M-0001", "Alan Kay", "Mixed Pool Ltd"))
    venue.set_speed(EPSON, 1500)
    jobs = [submitted_job_id(venue.submit(EPSON, f"A-M-{n:04d}", ref)) for n in range(5)]
    wait_until(lambda: venue.job(jobs[0])["state"] == "printing", 30, "the first on the head")
    # WHEN the ESC/POS printer jams (which clears its buffer)
    venue.set_fault(EPSON, "jam")
    wait_until(lambda: venue.printer_states().get(EPSON) == "dead", 30, "the ESC/POS printer dead")
    records = all_printed(venue, jobs, timeout_s=60)
    # THEN its badges were drained to the Zebra and printed there: in the Zebra's own
    # language, read back by their footers, each job out once unless flagged
    on_zebra = {r["job_id"] for r in records if r["printer_id"] == ZEBRA}
    assert on_zebra, "no badge moved from the jammed ESC/POS printer to the Zebra"
    counts = prints_by_job(venue)
    assert on_zebra <= {row["job_id"] for row in printed_on(venue, ZEBRA)}
    assert all(counts[job] >= 1 for job in jobs)
    flagged = {r["job_id"] for r in records if r.get("possible_duplicate")}
    assert {job for job in jobs if counts[job] > 1} <= flagged
