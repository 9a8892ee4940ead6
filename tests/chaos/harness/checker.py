"""Reconcile the printers' ground truth against what the kiosks were told.

Ground truth is the emulators' `GET /printed`: one row per badge that physically
came out, with the job id its footer carries. What kiosks were told is their
ledger of 201/200 answers. What the coordinator believes is each job's record
(`GET /v1/jobs/{id}`): state, `possible_duplicate` and history.

Invariants, as numbers (each must be 0):

- lost: accepted (201/200) but never came out of any printer, and neither
  `failed` nor `canceled` (a job the coordinator calls `printed` that no
  printer printed is lost too);
- unflagged duplicates: came out more than once, not flagged `possible_duplicate`;
- unjustified duplicates: flagged, but more extra prints than there are print
  attempts ("episodes": start granted -> left `printing` other than by its own
  ack) with a fault that struck the printer, its agent, its link, its
  coordinator replica or Redis between the grant and the end of the episode;
- strangers: a badge for a job no kiosk was told about (or one that was shed);
- key conflicts: one idempotency key answered with two job ids;
- shed jobs requeued by redrive: a job shed at submission (503 queue_full), whose
  key the kiosk's retry then got accepted, must be `suppressed` when redriven;
- unsettled: a submission the kiosk never got an answer for.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tests.chaos.harness.faults import FaultRecord
from tests.chaos.harness.kiosk import Submission

# Faults are logged by this process when it starts them; job history times come
# from the Redis clock (same host clock, millisecond resolution). One second of
# slack covers a kill that takes effect while its log entry is written.
SLACK_S = 1.0
GLOBAL_FAULTS = ("redis_kill",)
TERMINAL = ("printed", "failed", "canceled")
AGENT_ACTOR = "agent:agent-"


@dataclass
class Episode:
    """One start grant of a job, until the job left `printing`."""

    printer_id: str | None
    granted_at: float
    ended_at: float | None = None
    ended_to: str | None = None
    end_reason: str | None = None

    @property
    def uncertain(self) -> bool:
        return self.ended_to != "printed"


def printer_of(actor: str) -> str | None:
    return actor.removeprefix(AGENT_ACTOR) if actor.startswith(AGENT_ACTOR) else None


def episodes(history: Iterable[Mapping[str, Any]]) -> list[Episode]:
    found: list[Episode] = []
    current: Episode | None = None
    for entry in history:
        if entry["to"] == "printing":
            current = Episode(printer_of(str(entry["actor"])), float(entry["at"]))
            found.append(current)
        elif entry["from"] == "printing" and current is not None:
            current.ended_at, current.ended_to = float(entry["at"]), entry["to"]
            current.end_reason = entry.get("reason")
            current = None
    return found


@dataclass
class Checker:
    submissions: list[Submission]
    jobs: dict[str, dict[str, Any]]  # job id -> GET /v1/jobs/{id}, every accepted job
    printed_rows: list[dict[str, Any]]  # every emulator's /printed, with printer_id
    faults: list[FaultRecord]
    replica_of: dict[str, str]  # printer id -> the coordinator replica its agent uses
    # job id -> why an emulator threw its page away (from the emulators' logs): evidence
    # attached to a lost job, never a reason to stop counting it
    discards: dict[str, list[str]] = field(default_factory=dict)

    def relevant(self, record: FaultRecord, printer_id: str | None) -> bool:
        event = record.event
        if event.kind in GLOBAL_FAULTS:
            return True
        if printer_id is None:
            return False
        if event.kind == "coordinator_kill":
            return self.replica_of.get(printer_id) == event.target
        return event.target == printer_id

    def faults_within(self, episode: Episode, until: float) -> list[FaultRecord]:
        """Faults on the episode's printer (or global) that struck between grant and end."""
        end = episode.ended_at if episode.ended_at is not None else until
        return [
            record for record in self.faults
            if record.struck_at is not None and self.relevant(record, episode.printer_id)
            and episode.granted_at - SLACK_S <= record.struck_at <= end + SLACK_S
        ]  # fmt: skip

    def check(self, now: float) -> Report:
        report = Report()
        prints = collections.Counter(row["job_id"] for row in self.printed_rows)
        where: dict[str, list[str]] = collections.defaultdict(list)
        for row in self.printed_rows:
            where[str(row["job_id"])].append(row["printer_id"])
        accepted = {s.job_id: s for s in self.submissions if s.job_id is not None}
        self._count_submissions(report)
        shed = {job_id for s in self.submissions for job_id in s.shed_job_ids}
        for job_id, count in prints.items():
            if job_id is None:
                report.unidentified_prints += count
            elif job_id not in accepted:
                report.strangers.append(
                    {"job_id": job_id, "prints": count, "shed": job_id in shed,
                     "printers": where[job_id]}
                )  # fmt: skip
        for job_id, submission in accepted.items():
            job = self.jobs.get(job_id)
            self._check_job(report, submission, job, prints[job_id], where[job_id], now)
        report.physical_prints = len(self.printed_rows)
        report.faults = [record.as_dict() for record in self.faults]
        return report

    def _count_submissions(self, report: Report) -> None:
        for s in self.submissions:
            report.planned += 1
            report.attempts += s.attempts
            report.transient_failures += s.transient_failures
            report.shed_answers += len(s.shed_job_ids)
            report.duplicate_checks += s.duplicate_checks
            if s.job_id is not None:
                report.accepted += 1
                report.first_answer_200 += s.status == 200
            elif s.refusal is not None:
                report.refused.append(s.as_dict())
            else:
                report.unsettled.append(s.as_dict())
            if s.other_job_ids:
                report.key_conflicts.append(s.as_dict())

    def _check_job(self, report: Report, submission: Submission, job: dict[str, Any] | None,
                   count: int, printers: list[str], now: float) -> None:  # fmt: skip
        summary = {"job_id": submission.job_id, "idempotency_key": submission.key,
                   "prints": count, "printers": printers}  # fmt: skip
        if job is None:
            report.lost.append({**summary, "state": "missing from the store"})
            return
        state = job["state"]
        report.states[state] += 1
        report.flagged += bool(job["possible_duplicate"])
        summary.update(
            state=state,
            coordinator_prints=job.get("prints"),
            possible_duplicate=job["possible_duplicate"],
            history=job["history"],
        )
        if state not in TERMINAL:
            report.not_terminal.append(summary)
        if count == 0:
            if state not in ("failed", "canceled"):
                report.lost.append({**summary, "emulator_discards": self.discards.get(
                    str(submission.job_id), [])})  # fmt: skip
            return
        if state != "printed":
            report.printed_but_state.append(summary)
        if job.get("prints", 0) < count:
            report.unreported_prints += count - int(job.get("prints") or 0)
        if count > 1:
            self._check_duplicate(report, summary, job, count, now)

    def _check_duplicate(self, report: Report, summary: dict[str, Any], job: dict[str, Any],
                         count: int, now: float) -> None:  # fmt: skip
        if not job["possible_duplicate"]:
            report.unflagged_duplicates.append(summary)
            return
        justified = []
        for episode in episodes(job["history"]):
            if not episode.uncertain:
                continue
            matching = self.faults_within(episode, now)
            if matching:
                justified.append({
                    "printer_id": episode.printer_id, "granted_at": episode.granted_at,
                    "ended_at": episode.ended_at, "end_reason": episode.end_reason,
                    "faults": [f"#{r.event.number} {r.event.kind} {r.event.target}"
                               for r in matching],
                })  # fmt: skip
        entry = {**summary, "justified_by": justified}
        if count - 1 > len(justified):
            report.unjustified_duplicates.append(entry)
        else:
            report.justified_duplicates.append(entry)


@dataclass
class Report:
    planned: int = 0
    accepted: int = 0
    first_answer_200: int = 0  # the first answer a kiosk saw was 200: an earlier try got through
    attempts: int = 0
    transient_failures: int = 0
    shed_answers: int = 0
    duplicate_checks: int = 0
    physical_prints: int = 0
    unidentified_prints: int = 0
    unreported_prints: int = 0  # came out more often than agents could tell the coordinator
    flagged: int = 0
    states: collections.Counter[str] = field(default_factory=collections.Counter)
    redrive_outcomes: collections.Counter[str] = field(default_factory=collections.Counter)
    lost: list[dict[str, Any]] = field(default_factory=list)
    not_terminal: list[dict[str, Any]] = field(default_factory=list)
    unflagged_duplicates: list[dict[str, Any]] = field(default_factory=list)
    unjustified_duplicates: list[dict[str, Any]] = field(default_factory=list)
    justified_duplicates: list[dict[str, Any]] = field(default_factory=list)
    printed_but_state: list[dict[str, Any]] = field(default_factory=list)
    strangers: list[dict[str, Any]] = field(default_factory=list)
    key_conflicts: list[dict[str, Any]] = field(default_factory=list)
    refused: list[dict[str, Any]] = field(default_factory=list)
    unsettled: list[dict[str, Any]] = field(default_factory=list)
    faults: list[dict[str, Any]] = field(default_factory=list)

    def violations(self) -> dict[str, int]:
        """Every count that must be zero."""
        return {
            "lost": len(self.lost),
            "not_terminal": len(self.not_terminal),
            "printed_more_than_once_unflagged": len(self.unflagged_duplicates),
            "possible_duplicate_without_fault": len(self.unjustified_duplicates),
            "strangers": len(self.strangers),
            "unidentified_prints": self.unidentified_prints,
            "idempotency_key_conflicts": len(self.key_conflicts),
            # every shed job's key was accepted later as another job: a redrive must
            # find it taken and suppress the dead letter, never queue it to print
            "shed_jobs_requeued_by_redrive": self.redrive_outcomes["queued"],
            "refused": len(self.refused),
            "unsettled_submissions": len(self.unsettled),
        }

    @property
    def ok(self) -> bool:
        return not any(self.violations().values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "violations": self.violations(),
            "figures": self.figures(),
            "lost": self.lost, "not_terminal": self.not_terminal,
            "unflagged_duplicates": self.unflagged_duplicates,
            "unjustified_duplicates": self.unjustified_duplicates,
            "justified_duplicates": self.justified_duplicates,
            "printed_but_state": self.printed_but_state, "strangers": self.strangers,
            "key_conflicts": self.key_conflicts, "refused": self.refused,
            "unsettled": self.unsettled, "faults": self.faults,
        }  # fmt: skip

    def figures(self) -> dict[str, Any]:
        return {
            "planned": self.planned, "accepted": self.accepted,
            "first_answer_200": self.first_answer_200, "post_attempts": self.attempts,
            "transient_failures": self.transient_failures, "shed_answers": self.shed_answers,
            "double_scans_checked": self.duplicate_checks,
            "physical_prints": self.physical_prints, "final_states": dict(self.states),
            "flagged_possible_duplicate": self.flagged,
            "printed_twice_flagged_and_justified": len(self.justified_duplicates),
            "printed_but_not_in_state_printed": len(self.printed_but_state),
            "prints_the_coordinator_never_heard_of": self.unreported_prints,
            "shed_jobs_redriven": dict(self.redrive_outcomes),
            "faults_struck": sum(1 for f in self.faults if f.get("struck_at")),
        }  # fmt: skip

    def text(self) -> str:
        lines = ["chaos reconciliation", "  figures:"]
        lines += [f"    {key}: {value}" for key, value in self.figures().items()]
        lines.append("  invariants (each must be 0):")
        lines += [f"    {key}: {value}" for key, value in self.violations().items()]
        for name in ("lost", "unflagged_duplicates", "unjustified_duplicates", "strangers",
                     "key_conflicts", "not_terminal", "refused", "unsettled"):  # fmt: skip
            for item in getattr(self, name)[:5]:
                lines.append(f"  {name}: {_short(item)}")
        for item in self.justified_duplicates[:10]:
            lines.append(f"  justified duplicate {item['job_id']} printed at {item['printers']}: "
                         f"{[j['faults'] for j in item['justified_by']]}")  # fmt: skip
        for item in self.printed_but_state[:5]:
            lines.append(f"  printed but state {item['state']}: {_short(item)}")
        lines.append("  faults:")
        for fault in self.faults:
            lines.append(
                f"    #{fault['number']} {fault['kind']} {fault['target']} at {fault['at_s']} s "
                f"for {fault['duration_s']} s struck={_t(fault['struck_at'])} "
                f"cleared={_t(fault['cleared_at'])}" + (f" error={fault['error']}"
                                                         if fault["error"] else "")
            )  # fmt: skip
        return "\n".join(lines)


def _t(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _short(item: dict[str, Any]) -> str:
    history = item.get("history")
    compact = dict(item)
    if history is not None:
        compact["history"] = [f"{h['at']:.3f} {h['from']}->{h['to']} {h['actor']}: {h['reason']}"
                              for h in history]  # fmt: skip
    return str(compact)
