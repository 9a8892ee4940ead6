"""Stateful schemathesis: call sequences that follow the document's OpenAPI links.

Single calls with made-up ids mostly end in 404 or 409; sequences that carry
the ids one answer gives into the next call reach the states in between: a job
submitted then read, canceled, reprinted or submitted again; a job leased, then
started and acked under its lease (and acked twice); an enrolment code
exchanged (twice: single use). The links live in
badgeline/coordinator/api/openapi_links.py; schemathesis builds a hypothesis state
machine from them (`schema.as_state_machine()`), whose rules are "call this
operation with what that answer gave".

Each answer is checked as in fuzz.py (`check_answer`) and with schemathesis'
`ensure_resource_availability` (a job just created answers 404 through a link).
Only the document's links are followed: schemathesis' own link inference is
off, so a run says what the document promises.
"""

from __future__ import annotations

import json
import random
import re
import time
import urllib.request
from typing import Any

import requests
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.errors import Flaky
from schemathesis.engine.errors import is_inconsistent_replay
from schemathesis.specs.openapi.checks import ensure_resource_availability

from tests.conftest import (
    KIOSK_TOKEN,
    OPERATOR_TOKEN,
    OTHER_KIOSK_TOKEN,
    TEST_PRINTERS,
    agent_token,
)
from tests.security.fuzz import FuzzReport, FuzzTarget, check_answer

# A submitted job goes to a printer whose agent token the fuzzer has (mostly), so
# that its lease, start and ack can follow.
_VALID_TARGET = re.compile(r"^(printer-[a-z0-9]{1,16}|pool:[a-z0-9][a-z0-9-]{0,31}|auto)$")
_PAUSES = ("/pause", "/drain", "/reject")
# Who works the kiosk routes through one sequence: a kiosk sees only its own jobs
# (another's is 404, as an unknown one), so a job one desk submits is followed up
# by that desk, or by an operator, who sees every job.
FRONT_DESKS = (KIOSK_TOKEN, OTHER_KIOSK_TOKEN, OPERATOR_TOKEN)


def _roles(raw: dict[str, Any]) -> list[str]:
    text = str(raw.get("description", ""))
    return [r.strip() for r in text.removeprefix("Roles:").split(",")] if text else []


def _token(roles: list[str], printer_id: str | None, rng: random.Random, front: str) -> str | None:
    """Mostly a token of a documented role (an agent's for the printer in the path,
    the sequence's `front` desk for a kiosk route); sometimes none or one nobody has."""
    good: list[str] = []
    if "agent" in roles:
        good.append(agent_token(printer_id if printer_id in TEST_PRINTERS else "printer-a"))
    if "kiosk" in roles:
        good.append(front)
    elif "operator" in roles:
        good.append(OPERATOR_TOKEN)
    if not good or rng.random() < 0.05:
        return rng.choice([None, "nobody-has-this-token"])
    return rng.choice(good)


def _aim(case: Any, rng: random.Random, front: str) -> None:
    """Point a case at the test printers (mostly) and give it a caller's token."""
    params = case.path_parameters or {}
    if params.get("printer_id", TEST_PRINTERS[0]) not in TEST_PRINTERS and rng.random() < 0.7:
        params["printer_id"] = rng.choice(TEST_PRINTERS)
    if case.operation.label == "POST /v1/jobs" and isinstance(case.body, dict):
        _aim_submission(case.body, rng)
    headers = {k: v for k, v in (case.headers or {}).items() if k.lower() != "authorization"}
    token = _token(_roles(case.operation.definition.raw), params.get("printer_id"), rng, front)
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    case.headers = headers


def _aim_submission(body: dict[str, Any], rng: random.Random) -> None:
    """Make a schema-valid submission one the coordinator takes, most of the time.

    The document cannot say all of `badge_pdf_ref`'s rule (a URL with one of four
    schemes naming a .pdf: a validator, not a pattern), so a generated one is
    almost always refused with 422 and no sequence would start from a job.
    """
    if rng.random() < 0.8 and _VALID_TARGET.match(str(body.get("printer_target", ""))):
        body["printer_target"] = rng.choice(TEST_PRINTERS)
    if rng.random() < 0.9 and isinstance(body.get("badge_pdf_ref"), str):
        body["badge_pdf_ref"] = f"https://badges.example/{rng.randrange(10**6)}.pdf"


def _check(case: Any, response: Any, target: FuzzTarget, recorder: Any) -> None:
    report = target.report
    report.cases += 1
    report.by_operation[case.operation.label] += 1
    report.by_answer[f"{case.operation.label} {response.status_code}"] += 1
    try:
        check_answer(case, response, report)
        case.validate_response(response, checks=[ensure_resource_availability], recorder=recorder)
    except AssertionError as violation:
        report.failures.append(f"{case.operation.label} [stateful]: {violation}\n"
                               f"    {case.as_curl_command()}")  # fmt: skip
        if target.stop_on_failure:
            raise


def _made_up_ids_need_nothing_before(schema: Any) -> None:
    """Schemathesis takes `attendee_id` in a submission for the id of a resource no
    operation makes, so it would never start a sequence with a submission. Kiosks
    make attendee ids up: a submission needs nothing before it. Likewise printer ids:
    the venue names its printers (the fuzzer aims at the test printers, `_aim`) and
    no answer is a printer resource (GET /v1/printers is a page of them), so an
    operation on a printer needs nothing before it either."""
    made_up = ("attendee_id", "printer_id")
    for operation in schema.analysis.dependency_graph.operations.values():
        operation.inputs = [slot for slot in operation.inputs if slot.parameter_name not in made_up]


def _machine(target: FuzzTarget, session: requests.Session, document: dict[str, Any],
             rng: random.Random) -> type:  # fmt: skip
    schema = schemathesis.openapi.from_dict(document)
    schema.config.phases.stateful.inference.algorithms = []  # the document's links only
    _made_up_ids_need_nothing_before(schema)

    class Machine(schema.as_state_machine()):  # type: ignore[misc]
        paused = False
        front: str | None = None  # drawn at the sequence's first call

        def step(self, input: Any) -> Any:
            if input.transition is not None and input.is_applied:
                target.report.by_link[input.transition.id] += 1
            return super().step(input)

        def before_call(self, case: Any) -> None:
            if self.front is None:
                self.front = rng.choice(FRONT_DESKS)
            _aim(case, rng, self.front)

        def get_call_kwargs(self, case: Any) -> dict[str, Any]:
            return {"base_url": target.base_url, "session": session, "timeout": 30}

        def validate_response(self, response: Any, case: Any,
                              additional_checks: Any = None, **kwargs: Any) -> None:  # fmt: skip
            if response.status_code == 200 and case.path.endswith(_PAUSES):
                self.paused = True
            _check(case, response, target, self.recorder)

        def teardown(self) -> None:
            # A printer paused, drained or rejecting here takes no leases (or no jobs)
            # in the next sequences: every sequence starts with all three taking both.
            if self.paused:
                ready_printers(target.base_url, session, target.report)

    return Machine


def ready_printers(base_url: str, session: requests.Session, report: FuzzReport) -> None:
    """Resume the test printers, have them accept jobs and report them healthy:
    single-call cases (heartbeats saying jammed or unreachable, pauses for a week, a
    reject) leave them taking no leases or no jobs. An answer other than 200 is a
    failure of the run (these calls are well formed)."""
    operator = {"Authorization": f"Bearer {OPERATOR_TOKEN}"}
    for printer in TEST_PRINTERS:
        resume = session.post(f"{base_url}/v1/printers/{printer}/resume", timeout=30,
                              headers=operator)  # fmt: skip
        accept = session.post(f"{base_url}/v1/printers/{printer}/accept", timeout=30,
                              headers=operator)  # fmt: skip
        beat = session.post(
            f"{base_url}/v1/agents/{printer}/heartbeat", timeout=30,
            headers={"Authorization": f"Bearer {agent_token(printer)}"},
            json={"agent_id": f"fuzz-{printer}", "version": "fuzz", "health": {"reachable": True}},
        )  # fmt: skip
        for answer in (resume, accept, beat):
            if answer.status_code != 200:
                report.failures.append(f"readying {printer}: {answer.url} answered "
                                       f"{answer.status_code} {answer.text:.300}")  # fmt: skip


def _run(machine: Any, run_settings: settings, target: FuzzTarget, run_seed: int) -> str:
    """Run the state machine once; say how the run ended."""
    replayed = "ended by a replay the server answered otherwise"
    try:
        machine.run(settings=run_settings)
    except Flaky:
        return replayed
    except AssertionError as error:
        if is_inconsistent_replay(error):  # the same, as hypothesis sometimes says it
            return replayed
        if target.stop_on_failure:
            raise  # a check's failure, already in report.failures
        target.report.failures.append(f"stateful run with seed {run_seed}: {error!r:.500}")
        return "ended by an error"
    return "completed"


def fuzz_stateful(target: FuzzTarget, cases: int, scenarios_per_run: int = 40,
                  steps: int = 10) -> FuzzReport:  # fmt: skip
    """Run sequences of up to `steps` calls until `cases` calls were sent, in runs of
    `scenarios_per_run` sequences seeded `target.seed`, `target.seed + 1`, …

    A run can end early: hypothesis replays a prefix of draws and finds the server
    answering otherwise (a job is now printed, a code used), which it reports as
    flaky data generation. That is the server's state moving on, not a failure;
    the next run goes on with the next seed (schemathesis' own runner does the same).
    """
    with urllib.request.urlopen(target.base_url + "/v1/openapi.json", timeout=10) as answer:
        document = json.loads(answer.read())
    started = time.monotonic()
    report, run_seed = target.report, target.seed
    with requests.Session() as session:
        ready_printers(target.base_url, session, target.report)
        while report.cases < cases:
            sent = report.cases
            machine = _machine(target, session, document, random.Random(run_seed))
            hypothesis_seed(run_seed)(machine)
            # Generate only: shrinking a sequence against a server that keeps its state
            # between tries neither reproduces nor ends soon; failures carry a curl.
            run_settings = settings(max_examples=scenarios_per_run, stateful_step_count=steps,
                                    database=None, deadline=None, phases=[Phase.generate],
                                    suppress_health_check=list(HealthCheck))  # fmt: skip
            report.runs[_run(machine, run_settings, target, run_seed)] += 1
            run_seed += 1
            if report.cases == sent:
                report.failures.append(f"stateful run with seed {run_seed - 1} sent nothing")
                break
    report.seconds += time.monotonic() - started
    return report
