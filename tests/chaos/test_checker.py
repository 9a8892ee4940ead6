"""The checker catches what it is there to catch: each invariant is broken on
purpose in a hand-made history, and the report must count it. A checker that
passed everything would make the chaos run worthless."""

from __future__ import annotations

from typing import Any

from tests.chaos.harness.checker import Checker, Report, episodes
from tests.chaos.harness.faults import FaultRecord
from tests.chaos.harness.kiosk import Submission
from tests.chaos.harness.schedule import FaultEvent

T0 = 1_800_000_000.0
REPLICA_OF = {"printer-a": "coordinator-1", "printer-b": "coordinator-2"}


def submission(n: int, job_id: str | None = None, **changes: Any) -> Submission:
    body = {
        "attendee_id": f"att-{n}",
        "badge_pdf_ref": "artifact://x.pdf",
        "printer_target": "printer-a",
        "priority": 100,
        "idempotency_key": f"key-{n:08d}",
    }
    made = Submission(kiosk=0, body=body, job_id=job_id, status=201 if job_id else None)
    for name, value in changes.items():
        setattr(made, name, value)
    return made


def entry(at: float, old: str | None, new: str, actor: str, reason: str = "") -> dict[str, Any]:
    return {"at": T0 + at, "from": old, "to": new, "actor": actor, "reason": reason}


def printed_once(printer: str = "printer-a") -> list[dict[str, Any]]:
    agent = f"agent:agent-{printer}"
    return [
        entry(0, None, "queued", "kiosk:k"),
        entry(1, "queued", "leased", agent),
        entry(2, "leased", "printing", agent),
        entry(3, "printing", "printed", agent),
    ]


def reprinted_after_failover() -> list[dict[str, Any]]:
    """Granted on printer-a at T0+2, re-dispatched by failover at T0+10, printed by
    printer-b, then printer-a's late ack arrives: two badges."""
    a, b = "agent:agent-printer-a", "agent:agent-printer-b"
    return [
        entry(0, None, "queued", "kiosk:k"),
        entry(1, "queued", "leased", a),
        entry(2, "leased", "printing", a),
        entry(10, "printing", "queued", "coordinator:failover", "fo-printer-a-1: no ack"),
        entry(11, "queued", "leased", b),
        entry(12, "leased", "printing", b),
        entry(13, "printing", "printed", b),
        entry(14, "printed", "printed", a, "another print reported"),
    ]


def job(
    job_id: str,
    history: list[dict[str, Any]],
    state: str = "printed",
    flagged: bool = False,
    prints: int = 1,
) -> dict[str, Any]:
    return {
        "job_id": job_id,
        "state": state,
        "possible_duplicate": flagged,
        "prints": prints,
        "history": history,
    }


def row(job_id: str | None, printer: str = "printer-a") -> dict[str, Any]:
    return {"job_id": job_id, "at": T0, "printer_id": printer}


def fault(kind: str, target: str, struck: float | None, number: int = 1) -> FaultRecord:
    record = FaultRecord(FaultEvent(number, kind, target, 0.0, 1.0))
    record.struck_at = None if struck is None else T0 + struck
    record.cleared_at = None if struck is None else T0 + struck + 1
    return record


def check(
    submissions: list[Submission],
    jobs: list[dict[str, Any]],
    rows: list[dict[str, Any]],
    faults: list[FaultRecord] | None = None,
) -> Report:
    views = {view["job_id"]: view for view in jobs}
    checker = Checker(submissions, views, rows, faults or [], REPLICA_OF)
    return checker.check(now=T0 + 100)


def test_a_clean_history_passes() -> None:
    report = check([submission(1, "job_1")], [job("job_1", printed_once())], [row("job_1")])
    assert report.ok, report.violations()
    assert report.accepted == 1 and report.physical_prints == 1


def test_an_accepted_job_that_never_came_out_is_lost_even_if_the_store_says_printed() -> None:
    report = check(
        [submission(1, "job_1"), submission(2, "job_2")],
        [job("job_1", printed_once()), job("job_2", printed_once())],
        [row("job_1")],
    )
    assert report.violations()["lost"] == 1
    assert report.lost[0]["job_id"] == "job_2"


def test_failed_and_canceled_jobs_without_a_badge_are_accounted_for() -> None:
    report = check(
        [submission(1, "job_1"), submission(2, "job_2")],
        [job("job_1", [], state="failed"), job("job_2", [], state="canceled")],
        [],
    )
    assert report.ok, report.violations()


def test_an_accepted_job_missing_from_the_store_is_lost() -> None:
    report = check([submission(1, "job_1")], [], [])
    assert report.violations()["lost"] == 1


def test_a_job_still_open_after_settling_is_reported() -> None:
    report = check([submission(1, "job_1")], [job("job_1", [], state="queued")], [])
    assert report.violations()["not_terminal"] == 1 and report.violations()["lost"] == 1


def test_a_badge_printed_twice_without_the_flag_is_a_violation() -> None:
    report = check(
        [submission(1, "job_1")],
        [job("job_1", printed_once())],
        [row("job_1"), row("job_1")],
        [fault("agent_kill", "printer-a", 2.5)],
    )
    assert report.violations()["printed_more_than_once_unflagged"] == 1


def test_a_flagged_duplicate_with_a_fault_between_grant_and_resolution_is_justified() -> None:
    for kind, target in [
        ("agent_kill", "printer-a"),
        ("link_cut", "printer-a"),
        ("jam", "printer-a"),
        ("coordinator_kill", "coordinator-1"),
        ("redis_kill", "redis"),
    ]:
        report = check(
            [submission(1, "job_1")],
            [job("job_1", reprinted_after_failover(), flagged=True, prints=2)],
            [row("job_1", "printer-a"), row("job_1", "printer-b")],
            [fault(kind, target, 5.0)],
        )
        assert report.ok, (kind, report.violations())
        assert len(report.justified_duplicates) == 1


def test_a_flagged_duplicate_needs_a_fault_that_could_have_caused_it() -> None:
    unjustifying = [
        [],  # no fault at all
        [fault("agent_kill", "printer-a", -30.0)],  # before the grant
        [fault("agent_kill", "printer-a", 40.0)],  # after the failover resolved it
        [fault("agent_kill", "printer-b", 5.0)],  # another printer's agent
        [fault("coordinator_kill", "coordinator-2", 5.0)],  # the replica printer-a does not use
        [fault("agent_kill", "printer-a", None)],  # planned, never struck
    ]
    for faults in unjustifying:
        report = check(
            [submission(1, "job_1")],
            [job("job_1", reprinted_after_failover(), flagged=True, prints=2)],
            [row("job_1", "printer-a"), row("job_1", "printer-b")],
            faults,
        )
        assert report.violations()["possible_duplicate_without_fault"] == 1, faults


def test_one_uncertain_attempt_justifies_one_extra_badge_not_two() -> None:
    rows = [row("job_1", "printer-a"), row("job_1", "printer-b"), row("job_1", "printer-b")]
    report = check(
        [submission(1, "job_1")],
        [job("job_1", reprinted_after_failover(), flagged=True, prints=2)],
        rows,
        [fault("agent_kill", "printer-a", 5.0)],
    )
    assert report.violations()["possible_duplicate_without_fault"] == 1


def test_badges_nobody_was_told_about_are_strangers() -> None:
    shed = submission(2, "job_2", shed_job_ids=["job_shed"])
    report = check(
        [submission(1, "job_1"), shed],
        [job("job_1", printed_once()), job("job_2", printed_once())],
        [row("job_1"), row("job_2"), row("job_shed"), row("job_other"), row(None)],
    )
    assert report.violations()["strangers"] == 2
    assert {s["job_id"]: s["shed"] for s in report.strangers} == {
        "job_shed": True,
        "job_other": False,
    }
    assert report.violations()["unidentified_prints"] == 1


def test_one_key_answered_with_two_jobs_is_a_conflict_and_unanswered_ones_are_counted() -> None:
    conflict = submission(1, "job_1", other_job_ids=["job_9"])
    report = check([conflict, submission(2)], [job("job_1", printed_once())], [row("job_1")])
    assert report.violations()["idempotency_key_conflicts"] == 1
    assert report.violations()["unsettled_submissions"] == 1


def test_a_redrive_that_queues_a_shed_job_again_is_a_violation() -> None:
    report = check([submission(1, "job_1")], [job("job_1", printed_once())], [row("job_1")])
    report.redrive_outcomes.update(["suppressed", "queued"])
    assert report.violations()["shed_jobs_requeued_by_redrive"] == 1


def test_episodes_follow_each_grant_until_the_job_leaves_printing() -> None:
    found = episodes(reprinted_after_failover())
    assert [(e.printer_id, e.granted_at - T0, e.ended_to) for e in found] == [
        ("printer-a", 2, "queued"),
        ("printer-b", 12, "printed"),
    ]
    assert [e.uncertain for e in found] == [True, False]
