"""lp's other verbs over the operator API: `cancel` (jobs, or all of a printer's),
`move` (as lpmove), `reject` / `accept` (as cupsreject / cupsaccept) and `pause`
with a duration and a reason. Each refusal is one line naming what to fix."""

from __future__ import annotations

from tests.conftest import KIOSK_TOKEN, auth
from tests.helpers import job_body
from tests.ops.conftest import MakeVenue
from tests.ops.venue import Venue, alive


async def test_cancel_jobs_by_id_says_what_happened_to_each(venue: Venue) -> None:
    # GIVEN a queued job and a printed one
    agent = await alive(venue, "printer-a")
    printed = await venue.printed_job()
    (queued,) = await venue.submit("printer-a")
    # WHEN the operator cancels both
    result = await venue.cli("cancel", queued, printed)
    # THEN the queued one is canceled, the printed one refused with its state, exit 1
    assert (result.code, result.err) == (1, "")
    assert result.line(queued).split() == [queued, "canceled", "-"]
    refused = result.line(printed)
    assert refused.split()[1] == "refused" and "409 not_cancelable" in refused
    assert "is printed" in refused
    assert (await venue.job(queued))["state"] == "canceled"
    assert agent.printed == [printed]


async def test_cancel_all_of_a_printer_leaves_its_print_and_other_printers(venue: Venue) -> None:
    # GIVEN printer-a with three jobs waiting, printer-b with one
    await alive(venue, "printer-a")
    await alive(venue, "printer-b")
    ids = await venue.submit("printer-a", 3)
    (other,) = await venue.submit("printer-b")
    # WHEN the operator cancels all of printer-a's
    result = await venue.cli_ok("cancel", "--printer", "printer-a", "--all")
    # THEN it lists them, and only they are canceled
    assert result.out.splitlines() == ["canceled 3 job(s) of printer-a that had not started", *ids]
    assert [(await venue.job(j))["state"] for j in ids] == ["canceled"] * 3
    assert (await venue.job(other))["state"] == "queued"
    # AND --json is the API's answer
    again = (await venue.cli_ok("cancel", "--printer", "printer-a", "--all", "--json")).json()
    assert again == {"printer_id": "printer-a", "canceled": []}


async def test_cancel_usage_is_one_line(venue: Venue) -> None:
    for args, says in (
        (("cancel",), "name the jobs to cancel (JOB …), or --printer P --all"),
        (("cancel", "--printer", "printer-a"), "--all and --printer P go together"),
        (("cancel", "--all"), "--all and --printer P go together"),
        (("cancel", "job_0123456789abcdef", "--printer", "printer-a", "--all"),
         "name jobs, or --printer P --all, not both"),
        (("cancel", "job_42"), "argument JOB: 'job_42' is not a job id"),
        (("cancel", "--printer", "printer-zz", "--all"), "printer-zz: this coordinator knows"),
    ):  # fmt: skip
        result = await venue.cli(*args)
        assert (result.code, result.out) == (2, ""), (args, result.err)
        assert len(result.err.splitlines()) == 1 and says in result.err, (args, result.err)


async def test_move_a_waiting_job_and_refuse_one_that_printed(venue: Venue) -> None:
    # GIVEN printer-a with a waiting job, printer-b idle, and a job printer-a printed
    await alive(venue, "printer-a")
    await alive(venue, "printer-b")
    printed = await venue.printed_job()
    (waiting,) = await venue.submit("printer-a")
    key = (await venue.job(waiting))["idempotency_key"]
    # WHEN the operator moves the waiting one to printer-b
    moved = await venue.cli_ok("move", waiting, "--to", "printer-b")
    # THEN it is there, same key, and its history says so
    assert moved.out.strip() == (f"moved {waiting} from printer-a to printer-b "
                                 "(same id, key and place in print order)")  # fmt: skip
    job = await venue.job(waiting)
    assert (job["printer_id"], job["idempotency_key"]) == ("printer-b", key)
    history = (await venue.cli_ok("job", waiting)).out
    assert "moved by operator:ops from printer-a to printer-b" in history
    # AND moving it there again changes nothing
    again = await venue.cli_ok("move", waiting, "--to", "printer-b")
    assert again.out.strip() == f"{waiting} is on printer-b already: nothing changed"
    # AND the printed one is refused, in one line with its state
    refused = await venue.cli("move", printed, "--to", "printer-b")
    assert (refused.code, refused.out) == (1, "")
    assert refused.err.strip() == (
        f"badgeline move: 409 not_movable: job {printed} is printed: only a job no printer "
        "has started (queued, leased and not yet started, or parked) can be moved"
    )


async def test_move_to_a_printer_that_vanished_or_a_bad_target(make_venue: MakeVenue) -> None:
    venue = await make_venue(known_printers=[])
    await alive(venue, "printer-a")
    (job_id,) = await venue.submit("printer-a")
    unknown = await venue.cli("move", job_id, "--to", "printer-q")
    assert unknown.code == 1 and len(unknown.err.splitlines()) == 1
    assert unknown.err.startswith("badgeline move: 422 unknown_printer: ")
    assert unknown.err.strip().endswith("(--to: unknown printer printer-q)")
    bad = await venue.cli("move", job_id, "--to", "Printer A")
    assert bad.code == 2 and "argument --to: 'Printer A' is not a target" in bad.err
    assert (await venue.job(job_id))["printer_id"] == "printer-a"


async def test_reject_then_accept_a_printer(venue: Venue) -> None:
    # GIVEN printer-a with a job waiting, and printer-b
    await alive(venue, "printer-a")
    await alive(venue, "printer-b")
    (waiting,) = await venue.submit("printer-a")
    # WHEN the operator rejects new jobs for printer-a, saying why
    rejected = await venue.cli_ok("reject", "printer-a", "--reason", "toner low")
    assert rejected.out.startswith(
        "printer-a rejects new jobs; the 1 job(s) in its queue still print"
    )
    # THEN the printers table shows it not accepting, and the note says why
    printers = await venue.cli_ok("printers")
    assert printers.line("printer-a").split()[3] == "no"
    assert printers.line("printer-b").split()[3] == "yes"
    assert "  printer-a: rejecting new jobs: toner low" in printers.block("notes:")
    # AND a kiosk's job for it is refused while `auto` goes to printer-b
    refused = await venue.api("POST", "/v1/jobs", auth(KIOSK_TOKEN), job_body("printer-a"), 409)
    assert refused["error"]["code"] == "printer_rejecting"
    (routed,) = await venue.submit("auto")
    assert (await venue.job(routed))["printer_id"] == "printer-b"
    assert (await venue.job(waiting))["state"] == "queued"
    # WHEN it accepts again THEN it takes new jobs
    accepted = await venue.cli_ok("accept", "printer-a")
    assert accepted.out.startswith("printer-a accepts new jobs")
    await venue.submit("printer-a")
    assert "notes:" not in (await venue.cli_ok("printers")).out


async def test_pause_for_a_duration_with_a_reason(venue: Venue) -> None:
    await alive(venue, "printer-a")
    # WHEN the operator pauses printer-a for ten minutes, saying why
    paused = await venue.cli_ok("pause", "printer-a", "--for", "10m", "--reason", "roll change")
    # THEN the answer says for how long, and the note until when and why
    assert paused.out.startswith("paused printer-a for 10m\n")
    printer = (await venue.ops("GET", "/v1/printers"))["items"][0]
    assert printer["paused_reason"] == "roll change"
    assert printer["paused_until"] - printer["last_heartbeat_age_s"] > 0
    printers = await venue.cli_ok("printers")
    note = printers.block("notes:").splitlines()[1]
    assert note.startswith("  printer-a: paused until ") and note.endswith(" UTC: roll change")
    # AND a pause without --for lasts until resumed
    await venue.cli_ok("pause", "printer-a")
    assert "  printer-a: paused until resumed" in (await venue.cli_ok("printers")).out


async def test_pause_names_the_flag_of_a_bad_duration_or_reason(venue: Venue) -> None:
    await alive(venue, "printer-a")
    for args, says in (
        (("--for", "0"), "argument --for: '0': give a duration above 0 (30s, 10m, 2h)"),
        (("--for", "-5"), "argument --for: '-5' is not a duration: give e.g. 30s, 10m, 2h"),
        (("--for", "10x"), "argument --for: '10x' is not a duration"),
        (("--for", "8d"), "argument --for: '8d' is not a duration"),
        (("--for", "200h"), "argument --for: '200h': a pause lasts at most 7 days (168h)"),
        (("--reason", "x" * 10_000), "argument --reason: 10000 characters; say it in at most 200"),
        (("--reason", "  "), "argument --reason: give a few words, not an empty text"),
        (("--frob",), "unrecognized arguments: --frob"),
    ):  # fmt: skip
        result = await venue.cli("pause", "printer-a", *args)
        assert (result.code, result.out) == (2, ""), (args, result.err)
        (line,) = result.err.splitlines()
        assert line.startswith("badgeline pause: ") and says in line, (args, line)
        assert "for_s" not in line and "Traceback" not in result.err
    assert (await venue.ops("GET", "/v1/printers"))["items"][0]["paused"] is False
