"""A client generated from the live document prints a badge.

`openapi-python-client` (the dev extra) generates a package from the running
coordinator's `/v1/openapi.json`, once for this module and failing on any warning
(an operation it would skip, a body it cannot type). The test imports it and, as
a kiosk integrator would, uploads a badge, submits it and follows the job's events
until it is printed; the emulator counts the badge. Each step uses the generated client
only, no hand-written HTTP, and is its own function, so that a step (following
the job's events) can be put beside the others.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import secrets
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from badgeline.localvenue import wait_until
from badgeline.samples import sample_badge_pdf
from tests.e2e.venue import E2EVenue, prints_by_job

PACKAGE = "badgeline_client"
GENERATOR_CONFIG = {
    "package_name_override": PACKAGE,
    # 0.29 types JSON, form, multipart and octet-stream bodies: a PDF is bytes to it
    # (docs/api.md, "Generating a client")
    "content_type_overrides": {"application/pdf": "application/octet-stream"},
    "post_hooks": [],  # the generated code is imported, not read: no formatting pass
}
PRINTED_WITHIN_S = 30


@pytest.fixture(scope="module")
def generated(fleet: E2EVenue, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """The client package generated from the fleet's own document, imported."""
    folder = tmp_path_factory.mktemp("generated")
    config = folder / "config.json"
    config.write_text(json.dumps(GENERATOR_CONFIG))
    generator = Path(sys.executable).parent / "openapi-python-client"
    result = subprocess.run(
        [str(generator), "generate", "--url", fleet.url + "/v1/openapi.json", "--config",
         str(config), "--meta", "none", "--output-path", str(folder / PACKAGE),
         "--fail-on-warning"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    sys.path.insert(0, str(folder))
    try:
        yield importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(folder))
        for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
            del sys.modules[name]


def generated_module(name: str) -> Any:
    return importlib.import_module(f"{PACKAGE}.{name}")


@dataclass
class Kiosk:
    """A kiosk's calls, each through the generated client."""

    session: Any  # the generated AuthenticatedClient

    def call(self, tag: str, operation_id: str, **arguments: Any) -> Any:
        """The operation's answer, parsed into the generated models."""
        operation = generated_module(f"api.{tag}.{operation_id}")
        answer = operation.sync_detailed(client=self.session, **arguments)
        assert answer.parsed is not None, (operation_id, answer.status_code, answer.content)
        return answer

    def upload(self, pdf: bytes) -> str:
        name = hashlib.sha256(pdf).hexdigest() + ".pdf"
        file = generated_module("types").File(payload=BytesIO(pdf), file_name=name,
                                              mime_type="application/pdf")  # fmt: skip
        answer = self.call("kiosk", "upload_artifact", name=name, body=file)
        assert answer.status_code == 201, answer.content
        ref: str = answer.parsed.ref
        return ref

    def submit(self, attendee_id: str, ref: str, printer_target: str) -> str:
        job = generated_module("models").PrintJob(
            attendee_id=attendee_id, badge_pdf_ref=ref, printer_target=printer_target,
            idempotency_key=f"scan-{attendee_id}-{secrets.token_hex(4)}", priority=50,
        )  # fmt: skip
        answer = self.call("kiosk", "submit_job", body=job)
        assert answer.status_code == 201, answer.content
        job_id: str = answer.parsed.job_id
        return job_id

    def submit_and_follow(self, attendee_id: str, ref: str, state: str) -> tuple[str, list[Any]]:
        """Submit with the event stream (GET /v1/events) already open, as a kiosk
        follows its jobs; the job's events up to `state`, read with the generated
        JobEvent model over the generated client's own connection.

        The generator writes no code for a server-sent stream: a client reads its
        lines itself, each `data:` a JobEvent of the document's components."""
        job_event = generated_module("models").JobEvent
        seen: list[Any] = []
        http = self.session.get_httpx_client()
        with http.stream("GET", "/v1/events", timeout=PRINTED_WITHIN_S) as stream:
            assert stream.status_code == 200, stream.read()
            job_id = self.submit(attendee_id, ref, "printer-a")
            for line in stream.iter_lines():
                if not line.startswith("data:"):
                    continue
                event = job_event.from_dict(json.loads(line.removeprefix("data:")))
                if event.job_id == job_id:
                    seen.append(event)
                    if str(event.state) == state:
                        return job_id, seen
        raise AssertionError(f"the stream ended before {job_id} was {state}: {seen}")

    def job(self, job_id: str) -> Any:
        return self.call("kiosk", "get_job", job_id=job_id).parsed

    def wait_until_printed(self, job_id: str) -> Any:
        """Poll the job (GET /v1/jobs/{id}) until it is printed."""
        seen: dict[str, Any] = {}

        def printed() -> bool:
            seen["job"] = self.job(job_id)
            return str(seen["job"].state) == "printed"

        wait_until(printed, PRINTED_WITHIN_S, f"{job_id} to be printed")
        return seen["job"]


@pytest.fixture
def kiosk(healthy_fleet: E2EVenue, generated: ModuleType) -> Iterator[Kiosk]:
    """The generated client with the fleet's kiosk token."""
    with generated.AuthenticatedClient(base_url=healthy_fleet.url,
                                       token=healthy_fleet.kiosk_token) as session:  # fmt: skip
        yield Kiosk(session)


def test_a_generated_client_uploads_submits_and_follows_a_badge_to_paper(
    healthy_fleet: E2EVenue, kiosk: Kiosk
) -> None:
    # GIVEN the generated client, as a kiosk
    attendee_id = "A-GEN-" + secrets.token_hex(3)
    pdf = sample_badge_pdf(attendee_id, "Grace Generated", "Client Code Ltd")
    # WHEN it uploads the badge, submits it, follows its events to printed, and reads it
    ref = kiosk.upload(pdf)
    job_id, events = kiosk.submit_and_follow(attendee_id, ref, "printed")
    job = kiosk.wait_until_printed(job_id)
    # THEN the job is printed once, and the emulator has the badge, once
    assert (job.job_id, job.prints, job.badge_pdf_ref) == (job_id, 1, ref)
    assert [entry.to for entry in job.history][-1] == "printed"
    # AND the events it read are the job's life, in order, each once
    assert [str(e.state) for e in events] == [entry.to for entry in job.history]
    assert len({e.id for e in events}) == len(events)
    wait_until(lambda: prints_by_job(healthy_fleet)[job_id] == 1, PRINTED_WITHIN_S,
               f"{job_id} at the emulator")  # fmt: skip
    # AND the client reads the badge back as the bytes it sent
    downloaded = kiosk.call("kiosk", "download_artifact", name=ref.removeprefix("artifact://"))
    assert downloaded.parsed.payload.read() == pdf
    # AND it pages the attendee's jobs with the typed page model
    listed = kiosk.call("kiosk", "list_attendee_jobs", attendee_id=attendee_id, limit=1).parsed
    assert [j.job_id for j in listed.items] == [job_id] and listed.next_ is None
