"""The agent's local status endpoint (default 127.0.0.1:8421), for the tech beside the Pi.

    GET  /healthz      200 while every loop runs and none is stuck, 503 otherwise
                       (and while stopping)
    GET  /status       printer health, journal counts, coordinator, last error, uptime
    GET  /metrics      the same numbers for Prometheus (badgeline.agent.metrics)
    POST /test-print   a local test badge, straight to the printer; loopback callers only

/status answers from what the agent already knows (the last probe, the last
coordinator answer): it never talks to the printer or the coordinator
itself, so it answers at once even when both are away, which is when it is
needed. A test print is refused to anyone but the Pi itself, whatever
address the endpoint listens on: it spends paper at the desk.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from badgeline import __version__
from badgeline.agent.http_server import HttpServer, Reply, Request, json_reply
from badgeline.agent.loops.probe import can_print
from badgeline.agent.testprint import LocalPrintRefused
from badgeline.log import EVENT_LOGGER, log_event

if TYPE_CHECKING:
    from badgeline.agent.service import Agent

Handler = Callable[["Agent", Request], Awaitable[Reply]]


def is_loopback(remote: str | None) -> bool:
    """Whether a peer address is this machine's loopback (IPv4, IPv6, or v4-mapped v6)."""
    if not remote:
        return False  # a Unix socket or an unknown peer: not provably local
    try:
        address = ipaddress.ip_address(remote.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


class LastProblem(logging.Handler):
    """Keeps the latest warning or error event this agent logged, for /status.

    The agent's loops already log every problem once, with its printer id
    (outages, refusals, printer faults), so /status shows the same words the
    journal does. Other agents in the same process (tests) are filtered out
    by that printer id.
    """

    def __init__(self, printer_id: str) -> None:
        super().__init__(logging.WARNING)
        self.printer_id = printer_id
        self.last: dict[str, Any] | None = None

    def emit(self, record: logging.LogRecord) -> None:
        fields = getattr(record, "fields", None)
        if not isinstance(fields, dict) or fields.get("printer_id") != self.printer_id:
            return
        self.last = {
            "at": _iso(record.created),
            "level": record.levelname.lower(),
            **{key: _plain(value) for key, value in fields.items() if key != "printer_id"},
        }

    def attach(self) -> None:
        logging.getLogger(EVENT_LOGGER).addHandler(self)

    def detach(self) -> None:
        logging.getLogger(EVENT_LOGGER).removeHandler(self)


class StatusServer:
    """The HTTP endpoint; `port` is the bound one (status_port 0 picks a free port)."""

    def __init__(self, agent: Agent, host: str, port: int) -> None:
        self.agent = agent
        self.host = host
        self.port = port
        self._routes: dict[str, dict[str, Handler]] = {
            "/healthz": {"GET": _healthz, "HEAD": _healthz},
            "/status": {"GET": _status, "HEAD": _status},
            "/metrics": {"GET": _metrics, "HEAD": _metrics},
            "/test-print": {"POST": _test_print},
        }
        # No access log: a monitoring script polling /healthz would drown the journal.
        self._server = HttpServer(self._handle, host, port)

    async def start(self) -> None:
        await self._server.start()
        self.port = self._server.port
        log_event("status_serving", url=f"http://{self.host}:{self.port}")

    async def close(self) -> None:
        await self._server.close()

    async def _handle(self, request: Request) -> Reply:
        methods = self._routes.get(request.path)
        if methods is None:
            return json_reply({"error": "not found"}, status=404)
        handler = methods.get(request.method)
        if handler is None:
            return json_reply({"error": "method not allowed"}, status=405,
                              headers={"Allow": ", ".join(methods)})  # fmt: skip
        return await handler(self.agent, request)


async def _healthz(agent: Agent, request: Request) -> Reply:
    down, stuck = agent.loops_not_running(), agent.stuck_loops()
    if down or stuck:
        return json_reply({"ok": False, "loops_not_running": down, "stuck": stuck}, status=503)
    return json_reply({"ok": True})


async def _status(agent: Agent, request: Request) -> Reply:
    return json_reply(await describe(agent))


async def _metrics(agent: Agent, request: Request) -> Reply:
    from badgeline.agent.metrics import render

    body, content_type = render(await describe(agent), agent.print_metrics)
    return Reply(200, body, content_type)


async def _test_print(agent: Agent, request: Request) -> Reply:
    if not is_loopback(request.remote):
        log_event("test_print_refused", logging.WARNING, printer_id=agent.settings.printer_id,
                  remote=request.remote)  # fmt: skip
        return _refusal(403, "test prints are only taken from this machine (loopback)")
    if agent.stopping:
        return _refusal(503, "the agent is stopping")
    try:
        report = await agent.diagnostic_printer.print_test_badge()
    except LocalPrintRefused as refused:
        return _refusal(refused.status, refused.message)
    return json_reply(
        {"printed": True, "printer": report.model_dump(mode="json"), "ready": can_print(report)}
    )


async def describe(agent: Agent) -> dict[str, Any]:
    """The /status document."""
    settings, client, watch = agent.settings, agent.client, agent.watch
    journal: dict[str, int] | None = None
    journal_error: str | None = None
    try:
        journal = await agent.journal.counts()
    except Exception as error:  # a sick journal is something /status must show, not hide
        journal_error = repr(error)
    return {
        "printer_id": settings.printer_id,
        "agent_id": settings.agent_id,
        "version": __version__,
        "uptime_s": round(agent.uptime_s, 3),
        "stopping": agent.stopping,
        "loops_not_running": agent.loops_not_running(),
        "stuck": agent.stuck_loops(),
        "printer": {
            "kind": settings.printer.kind,
            "language": settings.printer.language,
            "model": agent.family.describe(),
            "confirmation": agent.confirmation,
            "ready": can_print(watch.latest),
            "probed_at": _iso(watch.probed_at),
            **watch.latest.model_dump(mode="json"),
        },
        "journal": journal,
        "journal_error": journal_error,
        "coordinator": {
            "url": client.base_url,
            "source": "config" if settings.coordinator_url else "mdns",
            "venue": settings.venue,
            "reachable": client.reachable,
            "last_answer_at": _iso(client.last_answer_at),
            "last_problem": client.last_problem,
        },
        "mdns": agent.mdns.status() if agent.mdns else {"enabled": False},
        "last_error": agent.last_problem.last,
    }


def _refusal(status: int, message: str) -> Reply:
    return json_reply({"printed": False, "error": message}, status=status)


def _iso(moment: float | None) -> str | None:
    return None if moment is None else datetime.fromtimestamp(moment, UTC).isoformat()


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)
