"""Enrolment: exchange the one-time `enrolment_code` for this agent's own token, once.

    token = await obtain_token(settings, stopping)   # before the Agent is built

Which token the agent uses:

1. `token` from the config (an operator-made token): as is, no enrolment;
2. the token file in state_dir (`agent-token.json`, mode 0600), written by an
   earlier enrolment with the same code and printer id: a restart never spends
   the code again (codes are single-use: a second exchange is refused `used`);
3. otherwise `POST /v1/enrol {code, printer_id, agent_id}` to the coordinator
   (the configured URL, or the one mDNS finds), and the token is written to the
   file before it is used: a temporary file created with mode 0600, fsynced,
   renamed over the old one, the directory fsynced. A crash at any point leaves
   either no file or a whole one.

The file keeps the SHA-256 of the code it was bought with, never the code: a
tech who provisions a *new* code (the token was revoked, the Pi was re-used)
gets a fresh enrolment; the same code on a restart does not.

A refusal (403 `enrolment_code_invalid`, 410 `used`/`expired`, 422) only a person
can fix: `EnrolmentRefused` says what to do, and `badgeline agent` exits with
EXIT_ENROLMENT_REFUSED, which the unit's `RestartPreventExitStatus=` keeps from
restarting in a loop. No answer (coordinator down, not found on mDNS yet, 5xx)
is retried with back-off until it answers or a stop is asked for.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import tempfile
from typing import Any

from badgeline.agent.config import AgentSettings
from badgeline.agent.http_client import HttpClient, HttpFailure
from badgeline.agent.retry import Backoff, OutageLog, sleep_unless_stopped
from badgeline.discovery import CoordinatorNotFound, find_coordinator
from badgeline.log import log_event
from badgeline.private_files import fsync_directory

ENROL_PATH = "/v1/enrol"
# How long one mDNS look-up for the coordinator lasts before the next try.
FIND_COORDINATOR_S = 10.0
_REFUSED_STATUSES = {400, 403, 404, 410, 422}

# What to tell the tech, per refusal code (api.md "Enrolment").
_WHAT_TO_DO = {
    "enrolment_code_invalid": "the code is not known, or was issued for another printer id:"
    " check printer_id, or ask the operator for a new code for this printer",
    "enrolment_code_used": "the code was already exchanged (by this Pi before its token file"
    " was lost, or by another one): ask the operator for a new code",
    "enrolment_code_expired": "the code has expired: ask the operator for a new code",
}
_DEFAULT_WHAT_TO_DO = "check enrolment_code and printer_id, or ask the operator for a new code"


class EnrolmentRefused(Exception):
    """The coordinator refused the code; `what_to_do` is for the person who can fix it."""

    def __init__(self, status: int, code: str, message: str) -> None:
        self.status, self.code, self.message = status, code, message
        self.what_to_do = _WHAT_TO_DO.get(code, _DEFAULT_WHAT_TO_DO)
        super().__init__(f"enrolment refused: HTTP {status} {code}: {message}; {self.what_to_do}")


class _NoAnswer(Exception):
    """Nothing definite came back: try again later."""


def code_sha256(settings: AgentSettings) -> str | None:
    if settings.enrolment_code is None:
        return None
    return hashlib.sha256(settings.enrolment_code.get_secret_value().encode()).hexdigest()


# --------------------------------------------------------------------------- the token file


def read_stored_token(settings: AgentSettings) -> str | None:
    """The token a previous enrolment stored for this printer id (and this code, if one is set)."""
    path = settings.token_path
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        log_event("enrolment_token_unreadable", logging.ERROR, path=str(path), error=repr(error))
        return None
    if not isinstance(stored, dict) or not isinstance(stored.get("agent_token"), str):
        log_event("enrolment_token_unreadable", logging.ERROR, path=str(path),
                  error="not a token file")  # fmt: skip
        return None
    if stored.get("printer_id") != settings.printer_id:
        return None  # the Pi was re-used for another printer: its old token is no good
    wanted = code_sha256(settings)
    if wanted is not None and stored.get("code_sha256") != wanted:
        return None  # a new code was provisioned: enrol with it
    token: str = stored["agent_token"]
    return token


def store_token(settings: AgentSettings, token: str, agent_id: str) -> None:
    """Write the token file atomically, readable by this user only (0600 from creation)."""
    directory = settings.state_dir
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    record: dict[str, Any] = {
        "printer_id": settings.printer_id,
        "agent_id": agent_id,
        "code_sha256": code_sha256(settings),
        "agent_token": token,
    }
    # mkstemp creates the file with mode 0600 whatever the umask: the token is
    # never readable by others, not even for the moment before a chmod.
    fd, temporary = tempfile.mkstemp(prefix=".agent-token-", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            json.dump(record, file)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, settings.token_path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    fsync_directory(directory)


# --------------------------------------------------------------------------- the exchange


async def obtain_token(settings: AgentSettings, stopping: asyncio.Event) -> str | None:
    """The agent token to use: configured, stored, or enrolled now; None if stopped first.

    Raises EnrolmentRefused when the coordinator refuses the code.
    """
    if settings.token is not None:
        return settings.token.get_secret_value()
    stored = read_stored_token(settings)
    if stored is not None:
        log_event("enrolment_token_loaded", printer_id=settings.printer_id,
                  path=str(settings.token_path))  # fmt: skip
        return stored
    if settings.enrolment_code is None:
        # The config validator lets this through only when the file existed at
        # load time; it was for another printer id, or unreadable.
        raise EnrolmentRefused(0, "no_enrolment_code",
                               f"{settings.token_path} holds no usable token for "
                               f"{settings.printer_id}")  # fmt: skip
    return await _enrol(settings, stopping)


async def _enrol(settings: AgentSettings, stopping: asyncio.Event) -> str | None:
    backoff = Backoff(settings.retry_initial_s, settings.retry_max_s)
    outage = OutageLog("enrolment", printer_id=settings.printer_id)
    context = settings.client_ssl()
    async with HttpClient(
        ssl_context=context, connect_timeout_s=settings.connect_timeout_s
    ) as http:
        while not stopping.is_set():
            try:
                base_url = await _coordinator_url(settings)
                token = await _exchange(http, base_url, settings)
            except _NoAnswer as problem:
                outage.failed(str(problem))
                if not await sleep_unless_stopped(backoff.next_delay(), stopping):
                    return None
                continue
            store_token(settings, token, settings.agent_id)
            outage.succeeded()
            log_event("agent_enrolled", printer_id=settings.printer_id,
                      agent_id=settings.agent_id, coordinator_url=base_url,
                      path=str(settings.token_path))  # fmt: skip
            return token
    return None


async def _coordinator_url(settings: AgentSettings) -> str:
    if settings.coordinator_url is not None:
        return settings.coordinator_url
    try:
        location = await find_coordinator(
            FIND_COORDINATOR_S, venue=settings.venue, interfaces=settings.mdns_interfaces
        )
    except CoordinatorNotFound as error:
        raise _NoAnswer(f"not found: {error}") from None
    except OSError as error:
        raise _NoAnswer(f"mDNS: {error}") from None
    return location.base_url


async def _exchange(http: HttpClient, base_url: str, settings: AgentSettings) -> str:
    assert settings.enrolment_code is not None
    body = {
        "code": settings.enrolment_code.get_secret_value(),
        "printer_id": settings.printer_id,
        "agent_id": settings.agent_id,
    }
    try:
        response = await http.request(
            "POST", base_url + ENROL_PATH, headers={"Content-Type": "application/json"},
            body=json.dumps(body).encode(), timeout_s=settings.request_timeout_s,
        )  # fmt: skip
        status, text = response.status, response.text()
    except (HttpFailure, TimeoutError, OSError) as error:
        raise _NoAnswer(f"{type(error).__name__}: {error}") from error
    try:
        data = json.loads(text) if text else None
    except json.JSONDecodeError:
        data = None
    if status == 201 and isinstance(data, dict) and isinstance(data.get("agent_token"), str):
        token: str = data["agent_token"]
        return token
    if status in _REFUSED_STATUSES:
        error_body = data.get("error") if isinstance(data, dict) else None
        fields = error_body if isinstance(error_body, dict) else {}
        raise EnrolmentRefused(status, str(fields.get("code", "unknown")),
                               str(fields.get("message", text[:200])))  # fmt: skip
    raise _NoAnswer(f"HTTP {status}: {text[:200]}")
