"""The operator CLI's contract: one clear line and a non-zero exit for each
way a call can fail, --json for machines, and the API as its only door."""

from __future__ import annotations

import ast
import asyncio
import subprocess
import sys
from pathlib import Path

from badgeline.ops.client import OpsClient
from tests.conftest import KIOSK_TOKEN, OPERATOR_TOKEN
from tests.ops.conftest import MakeVenue
from tests.ops.venue import REPO, Venue, alive


async def test_an_unreachable_coordinator_is_one_line_and_exit_3(venue: Venue) -> None:
    result = await venue.cli("queues", "--url", "http://127.0.0.1:9")
    assert result.code == 3 and result.out == ""
    assert result.err.strip() == (
        "badgeline queues: cannot reach the coordinator at http://127.0.0.1:9: "
        "connection refused (check --url / BADGELINE_URL)"
    )


async def test_a_missing_or_wrong_token_is_one_line_and_exit_1(venue: Venue) -> None:
    missing = await venue.cli("printers", token=None)
    assert missing.code == 1 and len(missing.err.strip().splitlines()) == 1
    assert missing.err.startswith("badgeline printers: 401 unauthorized:")
    assert "--token or BADGELINE_TOKEN" in missing.err
    kiosk = await venue.cli("rebalance", token=KIOSK_TOKEN)
    assert kiosk.code == 1 and kiosk.err.startswith("badgeline rebalance: 403 forbidden:")


async def test_an_unknown_job_is_a_404_line(venue: Venue) -> None:
    result = await venue.cli("job", "job_0123456789abcdef")
    assert result.code == 1
    assert result.err.strip() == "badgeline job: 404 not_found: no job job_0123456789abcdef"


async def test_a_redrive_that_left_a_job_waiting_exits_1_with_its_table(venue: Venue) -> None:
    # GIVEN a job that is not a dead letter (queued, as after an earlier redrive)
    (job_id,) = await venue.submit("printer-a")
    # WHEN the operator redrives it by id
    result = await venue.cli("dlq", "redrive", job_id)
    # THEN the table says why, and the exit code says that nothing was redriven
    assert result.code == 1 and result.err == ""
    assert result.line(job_id).split()[1] == "not_dead_lettered"


async def test_bad_usage_is_argparse_exit_2(venue: Venue) -> None:
    result = await venue.cli("peek", "not-a-printer")
    assert result.code == 2 and "is not a printer id" in result.err


async def test_a_timeout_of_zero_or_less_is_bad_usage_not_a_network_error(venue: Venue) -> None:
    for timeout in ("0", "-1"):
        result = await venue.cli("printers", "--timeout", timeout)
        assert result.code == 2, result.err
        assert "argument --timeout" in result.err and "above 0" in result.err


async def test_json_is_the_api_answer(venue: Venue) -> None:
    await venue.agent("printer-a").heartbeat()
    await venue.submit("printer-a", 2)
    peek = (await venue.cli_ok("peek", "printer-a", "--json")).json()
    assert peek == await venue.ops("GET", "/v1/queues/printer-a?limit=10")
    table = await venue.cli_ok("peek", "printer-a")
    assert table.out.startswith("printer-a: 2 job(s) waiting")


def test_the_cli_never_imports_the_coordinator_or_redis() -> None:
    # The operator CLI goes through the HTTP API only: no Redis client, no
    # coordinator internals (and a fast start on an operator's laptop).
    for path in sorted((REPO / "badgeline" / "ops").glob("*.py")):
        tree = ast.parse(Path(path).read_text())
        imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                    for alias in node.names}  # fmt: skip
        imported |= {node.module or "" for node in ast.walk(tree)
                     if isinstance(node, ast.ImportFrom)}  # fmt: skip
        forbidden = {m for m in imported if m.startswith(("redis", "badgeline.coordinator"))}
        assert not forbidden, f"{path.name} imports {forbidden}"


async def test_an_enrolment_code_from_the_cli_enrols_an_agent_once(venue: Venue) -> None:
    # GIVEN an operator who asks for a code for printer-a
    issued = await venue.cli_ok("enrolment-code", "printer-a", "--ttl", "600")
    code = issued.out.splitlines()[0]
    assert "enrolment code for printer-a: works once" in issued.out
    # WHEN an agent exchanges it THEN it gets its token, once
    body = {"code": code, "printer_id": "printer-a", "agent_id": "pi-7"}
    enrolled = await venue.api("POST", "/v1/enrol", {}, body, status=201)
    assert enrolled["printer_id"] == "printer-a" and enrolled["agent_token"]
    again = await venue.api("POST", "/v1/enrol", {}, body, status=410)
    assert again["error"]["code"] == "enrolment_code_used"
    # AND --json gives the API's answer
    as_json = (await venue.cli_ok("enrolment-code", "printer-b", "--json")).json()
    assert as_json["printer_id"] == "printer-b" and len(as_json["code"]) == 24


async def test_a_mistyped_printer_is_refused_before_anything_changes(venue: Venue) -> None:
    # GIVEN printer-a and printer-b heartbeating (on, so that none is declared dead
    # while the commands run: a failover decision would be a change)
    for printer in ("printer-a", "printer-b"):
        await alive(venue, printer)

    # WHEN the operator types printer-aa for printer-a, or drains to a typo
    paused = await venue.cli("pause", "printer-aa")
    drained = await venue.cli("drain", "printer-a", "--to", "printer-bb")
    resumed = await venue.cli("resume", "printer-aa")

    # THEN each is one line naming the unknown id and the known ones, exit 2
    for result, command, unknown in ((paused, "pause", "printer-aa"),
                                     (drained, "drain", "printer-bb"),
                                     (resumed, "resume", "printer-aa")):  # fmt: skip
        assert (result.code, result.out) == (2, "")
        assert result.err.startswith(f"badgeline {command}: {unknown}: this coordinator knows "
                                     "no such printer")  # fmt: skip
        assert "known: printer-a, printer-b" in result.err and "--force" in result.err
    # AND nothing changed: no printer paused or drained, no phantom printer made
    printers = (await venue.ops("GET", "/v1/printers"))["items"]
    assert [(p["printer_id"], p["paused"]) for p in printers] == [
        ("printer-a", False), ("printer-b", False)
    ]  # fmt: skip
    assert (await venue.ops("GET", "/v1/failovers"))["items"] == []

    # AND the triage reads refuse a typo too, rather than "0 job(s) waiting" / "no decisions"
    for command in (("peek", "printer-aa"), ("failovers", "--printer", "printer-aa")):
        result = await venue.cli(*command)
        assert (result.code, result.out) == (2, ""), result.err
        assert result.err.startswith(f"badgeline {command[0]}: printer-aa: this coordinator knows")

    # AND --force acts on a printer not set up yet
    forced = await venue.cli_ok("pause", "printer-c", "--force", "--for", "60")
    assert forced.out.startswith("paused printer-c for 1m")


async def test_a_refused_field_is_named_by_the_flag_with_what_is_wrong_with_it(
    venue: Venue,
) -> None:
    # GIVEN a value the coordinator refuses that the CLI does not check itself
    # (the API's own bounds: a reprint's --priority)
    printed = await venue.printed_job()
    result = await venue.cli("reprint", printed, "--reason", "smudged", "--priority", "5000")
    # THEN the line names the flag typed, not the API's field, and what is wrong
    assert result.code == 1
    assert result.err.strip() == (
        "badgeline reprint: 422 validation_failed: --priority: Input should be less than or "
        "equal to 1000"
    )


def test_output_piped_into_a_reader_that_stops_early_is_no_traceback() -> None:
    # GIVEN `badgeline … | head -3`, where head has exited before the command writes
    command = [sys.executable, "-m", "badgeline.cli", "hash-token", "--name", "k",
               "--role", "kiosk"]  # fmt: skip
    with subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE) as child:  # fmt: skip
        assert child.stdout is not None and child.stderr is not None
        child.stdout.close()
        # THEN it stops quietly, with a non-zero status
        err = child.stderr.read().decode()
        assert child.wait(timeout=60) == 1
    assert err == ""


async def test_the_cli_reads_a_list_whole_along_its_cursors(make_venue: MakeVenue) -> None:
    # GIVEN seven dead letters (a queue of one, spilling nowhere)
    venue = await make_venue(high_water_mark=1, spill_named_targets=False)
    await venue.submit("printer-a")
    shed = await venue.submit("printer-a", n=7, status=503)
    # WHEN the client reads the list two at a time
    client = OpsClient(venue.url, OPERATOR_TOKEN)
    whole = await asyncio.to_thread(client.get_all, "/v1/dead-letters", page_limit=2)
    # THEN it has every dead letter once, and no page after it
    assert sorted(d["job_id"] for d in whole["items"]) == sorted(shed)
    assert whole["next"] is None
    # AND `dlq list` prints each of them
    listed = await venue.cli_ok("dlq", "list")
    assert all(listed.out.count(job_id) == 1 for job_id in shed), listed.out
