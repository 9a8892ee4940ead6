"""`badgeline agent --config agent.toml`: run the print agent until SIGTERM or SIGINT.

Exit codes: 0 after a clean stop, 1 when a loop crashed or the start failed
(systemd restarts the agent; the journal makes that safe), 2 for a
configuration error, 3 when the coordinator refused the enrolment code. The
unit's `RestartPreventExitStatus=2 3` keeps those two from restarting in a
loop: only a person can fix them.

Before the agent proper starts, an agent with an enrolment code and no token
exchanges the code for its token (enrolment.py); meanwhile it tells systemd
it is still starting (EXTEND_TIMEOUT_USEC) and feeds the watchdog, since
waiting for a coordinator that is not up yet is normal at a venue's boot.

Under systemd (Type=notify): READY=1 once the loops run and the status
endpoint is bound, WATCHDOG=1 from a task on the agent's own event loop (a
wedged loop stops the pings and systemd restarts the agent), STOPPING=1 as
soon as a stop begins.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from badgeline.agent.pydantic_plugins import skip_plugin_discovery

# Before the first pydantic model below is defined (2.2 MB; see the module).
skip_plugin_discovery()

from pydantic import SecretStr  # noqa: E402

from badgeline import systemd_notify  # noqa: E402
from badgeline.agent.config import AgentSettings, ConfigError, load_agent_settings  # noqa: E402
from badgeline.log import configure_logging, log_event  # noqa: E402

if TYPE_CHECKING:
    from badgeline.agent.service import Agent

EXIT_CONFIG_ERROR = 2
EXIT_ENROLMENT_REFUSED = 3
# While enrolling, systemd's start timeout is pushed back by this much at a time.
ENROLMENT_START_EXTENSION_S = 120
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        type=Path,
        default=None,
        help="agent TOML file (BADGELINE_AGENT_* environment variables override it)",
    )
    parser.add_argument("--coordinator-url", default=None, help="overrides coordinator_url")
    parser.add_argument("--state-dir", type=Path, default=None, help="overrides state_dir")
    parser.add_argument("--log-level", default=None, choices=["DEBUG", "INFO", "WARNING", "ERROR"])


def run(args: argparse.Namespace) -> int:
    overrides = {
        key: value
        for key, value in (
            ("coordinator_url", args.coordinator_url),
            ("state_dir", args.state_dir),
            ("log_level", args.log_level),
        )
        if value is not None
    }
    try:
        settings = load_agent_settings(args.config, **overrides)
    except ConfigError as error:
        print(f"badgeline agent: {error}", file=sys.stderr)
        return EXIT_CONFIG_ERROR
    configure_logging(settings.log_level)
    return asyncio.run(serve(settings))


async def serve(settings: AgentSettings) -> int:
    from badgeline.agent.service import Agent

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in _STOP_SIGNALS:
        loop.add_signal_handler(signum, stop.set)
    try:
        if settings.token is None:
            token = await _enrolled_token(settings, stop)
            if isinstance(token, int):
                return token
            settings = settings.model_copy(update={"token": SecretStr(token)})
        agent = Agent(settings)
        for signum in _STOP_SIGNALS:  # from now on a signal stops the agent
            loop.add_signal_handler(signum, agent.request_stop)
        if stop.is_set():
            return 0
        return await _run(agent)
    finally:
        for signum in _STOP_SIGNALS:
            loop.remove_signal_handler(signum)


async def _enrolled_token(settings: AgentSettings, stop: asyncio.Event) -> str | int:
    """The stored or newly enrolled token, or the exit code when there is none to be had."""
    from badgeline.agent.enrolment import EnrolmentRefused, obtain_token

    systemd_notify.notify_status(f"{settings.printer_id}: enrolling with the coordinator")
    watchdog = asyncio.create_task(_starting_watchdog(), name="systemd-watchdog-enrolment")
    try:
        token = await obtain_token(settings, stop)
    except EnrolmentRefused as refused:
        log_event("enrolment_refused", logging.CRITICAL, printer_id=settings.printer_id,
                  status=refused.status, code=refused.code, message=refused.message,
                  what_to_do=refused.what_to_do)  # fmt: skip
        print(f"badgeline agent: {refused}", file=sys.stderr)
        return EXIT_ENROLMENT_REFUSED
    finally:
        watchdog.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watchdog
    return 0 if token is None else token


async def _starting_watchdog() -> None:
    """Keep systemd waiting (and its watchdog fed) while the coordinator is not there yet."""
    interval = min(systemd_notify.watchdog_interval() or 30.0, ENROLMENT_START_EXTENSION_S / 4)
    while True:
        systemd_notify.notify(f"EXTEND_TIMEOUT_USEC={ENROLMENT_START_EXTENSION_S * 1_000_000}")
        systemd_notify.notify_watchdog()
        await asyncio.sleep(interval)


async def _run(agent: Agent) -> int:
    try:
        await agent.start()
    except Exception as error:
        # Start-up failures (journal unusable, printer config unusable, status port taken).
        # Critical, and said on stderr too: at info, a log_level of WARNING or above
        # made this exit 1 without a word.
        log_event("agent_failed", logging.CRITICAL, error=repr(error),
                  printer_id=agent.settings.printer_id)  # fmt: skip
        print(f"badgeline agent: cannot start: {error}", file=sys.stderr)
        return 1
    # Fed only while no loop is stuck: a wedged agent is restarted, not left to look alive.
    watchdog = asyncio.create_task(
        systemd_notify.watchdog_loop(healthy=lambda: not agent.stuck_loops()),
        name="systemd-watchdog",
    )
    systemd_notify.notify_ready(status=_status_line(agent.settings, agent.status_port))
    try:
        await agent.wait_stop_requested()
    finally:
        # Said before the badge in hand finishes: systemd then knows the quiet
        # that follows is a stop, not a hang.
        systemd_notify.notify_stopping()
        await agent.stop()
        watchdog.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watchdog
    return agent.exit_code


def _status_line(settings: AgentSettings, status_port: int | None) -> str:
    coordinator = settings.coordinator_url or "found by mDNS"
    return f"{settings.printer_id}: coordinator {coordinator}, status port {status_port}"
