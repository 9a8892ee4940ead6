"""CoordinatorClient: the agent's side of the agent API (heartbeat, lease, start, ack).

Typed results, three kinds of outcome:

- an answer (including a start refusal, which is a decision, not an error);
- `CoordinatorUnavailable`: nothing definite came back (connection refused or
  reset, a timeout, a 5xx): retry later, the request may or may not have been
  applied, which is why start and ack are idempotent on the coordinator;
- `CoordinatorRejected`: a 4xx the agent cannot fix by retrying at once
  (a bad token, an unknown job): the caller decides.

Responses are read leniently: the API may add fields, and an agent in the
field must keep working against a newer coordinator.

The base URL may be unknown at first and may change (`move_to`): an agent
without a configured URL learns it from mDNS, and follows the coordinator
when it moves. Until then every call is `CoordinatorUnavailable`, so the
loops back off exactly as they do through an outage.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TypeVar
from urllib.parse import quote

from pydantic import BaseModel, ValidationError

from badgeline.agent.http_client import HttpClient, HttpFailure
from badgeline.protocol.agent_models import (
    AckRequest,
    AckResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    LeasedJob,
    LeasedPrintJob,
    RenewRequest,
    RenewResponse,
    StartRequest,
    StartResponse,
)

ModelT = TypeVar("ModelT", bound=BaseModel)

CORRELATION_HEADER = "X-Correlation-ID"
# Slack on top of the long-poll wait before a lease request counts as lost.
LEASE_SLACK_S = 10.0
NOT_FOUND_YET = "no coordinator found yet (looking for it by mDNS)"


@dataclass(frozen=True)
class UnreadableJob:
    """A leased job whose payload this agent cannot read: that job fails, not the lease.

    The lease's other jobs print. The payload is kept as it came, for the journal.
    """

    job_id: str
    lease_id: str
    lease_ttl_s: float
    payload: dict[str, Any]
    problem: str
    fields: tuple[str, ...]  # the payload's fields that did not validate


class CoordinatorUnavailable(Exception):
    """No definite answer: the coordinator is down, unreachable, overloaded or failing."""


class CoordinatorRejected(Exception):
    """The coordinator refused the request with a 4xx; `code` is the error body's code.

    `reason` is the body's top-level `reason`, which refusals such as a 409 on
    start carry next to the error (`lease_revoked`, `already_printed`, `canceled`).
    """

    def __init__(self, status: int, code: str, message: str, reason: str | None = None) -> None:
        super().__init__(f"HTTP {status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.reason = reason


class CoordinatorClient:
    """The agent API over one kept-alive HTTP client for one printer's agent.

    Use `async with CoordinatorClient(...)`, or `await open()` / `await close()`.
    """

    def __init__(
        self,
        base_url: str | None,
        printer_id: str,
        token: str,
        *,
        connect_timeout_s: float = 3.0,
        request_timeout_s: float = 10.0,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/") if base_url else None
        # None: verify https against the system's CAs (coordinator_ca_file sets one).
        self.ssl_context = ssl_context
        self.printer_id = printer_id
        self.token = token
        self.connect_timeout_s = connect_timeout_s
        self.request_timeout_s = request_timeout_s
        self._http: HttpClient | None = None
        # Set (and replaced) on every move: requests still talking to the old
        # address give up at once instead of waiting out a long-poll.
        self._moved = asyncio.Event()
        self._discovery_abandoned = asyncio.Event()
        # What /status shows: None until the first call, then whether the last
        # call got an answer (any HTTP answer, refusals included), and when.
        self.reachable: bool | None = None
        self.last_answer_at: float | None = None
        self.last_problem: str | None = None
        self._success_listeners: list[Callable[[], None]] = []

    def on_success(self, listener: Callable[[], None]) -> None:
        """Call `listener()` after every call the coordinator answers with a success.

        Loops that back off through an outage (the ack outbox) use it to retry
        the moment any other loop finds the coordinator back.
        """
        self._success_listeners.append(listener)

    def move_to(self, base_url: str) -> None:
        """Talk to the coordinator at `base_url` from now on; calls in flight fail and retry."""
        base_url = base_url.rstrip("/")
        if base_url == self.base_url:
            return
        self.base_url = base_url
        moved, self._moved = self._moved, asyncio.Event()
        moved.set()

    # ------------------------------------------------------------ lifecycle

    async def open(self) -> None:
        if self._http is None:
            # One client for every call and badge fetch: the CA bundle applies to all.
            # A short connect timeout: an unreachable coordinator must show up in
            # seconds, while a long-poll may legitimately keep the socket quiet.
            self._http = HttpClient(
                ssl_context=self.ssl_context, connect_timeout_s=self.connect_timeout_s
            )

    async def close(self) -> None:
        http, self._http = self._http, None
        if http is not None:
            await http.close()

    async def __aenter__(self) -> CoordinatorClient:
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    @property
    def auth_headers(self) -> dict[str, str]:
        """The agent token, sent per request so it never goes to another host."""
        return {"Authorization": f"Bearer {self.token}"}

    @property
    def http(self) -> HttpClient:
        """The shared connections; the badge fetcher uses them too."""
        if self._http is None:
            raise RuntimeError("the coordinator client is not open")
        return self._http

    # ------------------------------------------------------------ the agent API

    async def heartbeat(self, beat: HeartbeatRequest) -> HeartbeatResponse:
        data = await self._post(self._agent_path("heartbeat"), beat)
        return _lenient(HeartbeatResponse, data)

    async def lease(self, wait_s: float, max_jobs: int) -> list[LeasedJob | UnreadableJob]:
        """Long-poll for up to `max_jobs` jobs; returns [] when `wait_s` passes without one."""
        path = self._agent_path("lease") + f"?wait={wait_s:g}&max={max_jobs}"
        # Not resent by the HTTP client: a lease the coordinator granted but whose
        # answer was lost holds its jobs until the lease expires.
        data = await self._post(
            path, None, timeout_s=wait_s + self.request_timeout_s + LEASE_SLACK_S,
            idempotent=False,
        )  # fmt: skip
        jobs = data.get("jobs") if isinstance(data, dict) else None
        if not isinstance(jobs, list):
            raise CoordinatorUnavailable(f"lease answer without a jobs list: {data!r:.200}")
        return [_leased(job) for job in jobs]

    async def start(
        self, job_id: str, lease_id: str, *, correlation_id: str | None = None
    ) -> StartResponse:
        """Ask for the start grant. A 409 refusal is returned as `granted=False` with a reason."""
        path = self._agent_path("jobs", job_id, "start")
        try:
            data = await self._post(path, StartRequest(lease_id=lease_id), correlation_id)
        except CoordinatorRejected as rejected:
            if rejected.status != 409:
                raise
            return StartResponse(granted=False, reason=rejected.reason or rejected.code)
        return _lenient(StartResponse, data)

    async def renew(
        self, job_id: str, lease_id: str, *, correlation_id: str | None = None
    ) -> RenewResponse:
        """Keep a lease the agent still needs (its badge waits for the printer)."""
        path = self._agent_path("jobs", job_id, "renew")
        data = await self._post(path, RenewRequest(lease_id=lease_id), correlation_id)
        return _lenient(RenewResponse, data)

    async def ack(
        self, job_id: str, ack: AckRequest, *, correlation_id: str | None = None
    ) -> AckResponse:
        data = await self._post(self._agent_path("jobs", job_id, "ack"), ack, correlation_id)
        return _lenient(AckResponse, data)

    # ------------------------------------------------------------ plumbing

    def _agent_path(self, *parts: str) -> str:
        quoted = "/".join(quote(part, safe="") for part in (self.printer_id, *parts))
        return f"/v1/agents/{quoted}"

    async def _post(
        self,
        path: str,
        body: BaseModel | None,
        correlation_id: str | None = None,
        *,
        timeout_s: float | None = None,
        idempotent: bool = True,
    ) -> Any:
        # idempotent: the coordinator applies the call once however often it comes
        # (start, ack, heartbeat), so the HTTP client may resend it on a new connection.
        timeout_s = timeout_s or self.request_timeout_s
        base_url = await self._coordinator_url(timeout_s)
        headers = {**self.auth_headers, "Content-Type": "application/json"}
        if correlation_id:
            headers[CORRELATION_HEADER] = correlation_id
        payload = body.model_dump_json(exclude_none=True) if body is not None else "{}"
        request = asyncio.ensure_future(
            self.http.request("POST", base_url + path, headers=headers, body=payload.encode(),
                              timeout_s=timeout_s, idempotent=idempotent)
        )  # fmt: skip
        moved = asyncio.ensure_future(self._moved.wait())
        try:
            await asyncio.wait({request, moved}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            moved.cancel()
            if not request.done():
                request.cancel()
                await asyncio.gather(request, return_exceptions=True)
        if request.cancelled():
            raise self._unavailable(f"the coordinator moved from {base_url} to {self.base_url}")
        try:
            response = request.result()
        except (HttpFailure, TimeoutError, OSError) as error:
            raise self._unavailable(_describe(error)) from error
        self.reachable, self.last_answer_at = True, time.time()
        data = _interpret(response.status, response.text())
        for listener in self._success_listeners:
            listener()
        return data

    async def _coordinator_url(self, timeout_s: float) -> str:
        """Where to send a call. While mDNS has not found the coordinator yet, the
        call waits for it (up to its own timeout) rather than failing: a failure
        would put the loop into its back-off, and an agent at boot would send its
        first heartbeat and lease a second or more after the coordinator was found.
        `stop_waiting_for_discovery` ends the wait. The request then gets its whole
        timeout: a lease long-poll given less than its wait would give up on an
        answer the coordinator is still holding for it."""
        if self.base_url is None and not self._discovery_abandoned.is_set():
            self.last_problem = NOT_FOUND_YET  # what /status shows meanwhile
            waits = {asyncio.ensure_future(self._moved.wait()),
                     asyncio.ensure_future(self._discovery_abandoned.wait())}  # fmt: skip
            try:
                await asyncio.wait(waits, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for wait in waits:
                    wait.cancel()
        if self.base_url is None:
            raise self._unavailable(NOT_FOUND_YET)
        return self.base_url

    def stop_waiting_for_discovery(self) -> None:
        """Calls waiting for mDNS to find the coordinator fail now, and later ones at
        once (the agent is stopping: nothing should wait on a coordinator it never had)."""
        self._discovery_abandoned.set()

    def _unavailable(self, problem: str) -> CoordinatorUnavailable:
        self.reachable, self.last_problem = False, problem
        return CoordinatorUnavailable(problem)


def _interpret(status: int, text: str) -> Any:
    try:
        data = json.loads(text) if text else None
    except json.JSONDecodeError:
        data = None
    if 200 <= status < 300:
        if data is None:
            raise CoordinatorUnavailable(f"HTTP {status} without a JSON body")
        return data
    if status >= 500 or status == 429:
        raise CoordinatorUnavailable(f"HTTP {status}: {_error_text(data, text)}")
    code, message = _error_fields(data, text)
    reason = data.get("reason") if isinstance(data, dict) else None
    raise CoordinatorRejected(status, code, message, reason if isinstance(reason, str) else None)


def _error_fields(data: Any, text: str) -> tuple[str, str]:
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict):
        return str(error.get("code", "unknown")), str(error.get("message", ""))
    return "unknown", text[:200]


def _error_text(data: Any, text: str) -> str:
    code, message = _error_fields(data, text)
    return f"{code}: {message}" if message else code


def _describe(error: BaseException) -> str:
    if isinstance(error, TimeoutError):
        return "timed out"
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


def _lenient(model: type[ModelT], data: Any) -> ModelT:
    """Validate an answer, ignoring fields this agent does not know yet."""
    if not isinstance(data, dict):
        raise CoordinatorUnavailable(f"expected a JSON object, got {data!r:.200}")
    known = {name: value for name, value in data.items() if name in model.model_fields}
    try:
        return model.model_validate(known)
    except ValidationError as error:
        raise CoordinatorUnavailable(f"malformed {model.__name__}: {error}") from error


class _LeaseOf(BaseModel):
    """A lease's own fields, without its job: what failing that one job needs."""

    job_id: str
    lease_id: str
    lease_ttl_s: float
    job: dict[str, Any]


def _leased(data: Any) -> LeasedJob | UnreadableJob:
    """One job of a lease answer; a job whose payload does not validate is unreadable.

    Without a job id and lease id there is nothing to fail: the answer is malformed.
    """
    lease = _lenient(_LeaseOf, data)
    try:
        return LeasedJob(job_id=lease.job_id, lease_id=lease.lease_id,
                         lease_ttl_s=lease.lease_ttl_s,
                         job=LeasedPrintJob.model_validate(lease.job))  # fmt: skip
    except ValidationError as error:
        fields = tuple(str(problem["loc"][0]) for problem in error.errors() if problem["loc"])
        return UnreadableJob(lease.job_id, lease.lease_id, lease.lease_ttl_s, lease.job,
                             f"{error.error_count()} field(s) do not validate: "
                             f"{', '.join(fields) or 'the job'}", fields)  # fmt: skip
