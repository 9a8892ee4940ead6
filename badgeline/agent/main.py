"""`badgeline agent --config agent.toml`: run the print agent until SIGTERM or SIGINT.

Exit codes: 0 after a clean stop, 1 when a loop crashed (systemd restarts the
agent; the journal makes that safe), 2 for a configuration error.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from pathlib import Path

from badgeline.agent.config import AgentSettings, ConfigError, load_agent_settings
from badgeline.coordinator.events import configure_logging, log_event

EXIT_CONFIG_ERROR = 2


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
        settings.require_coordinator_url()
    except ConfigError as error:
        print(f"badgeline agent: {error}", file=sys.stderr)
        return EXIT_CONFIG_ERROR
    configure_logging(settings.log_level)
    return asyncio.run(serve(settings))


async def serve(settings: AgentSettings) -> int:
    from badgeline.agent.service import Agent

    agent = Agent(settings)
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, agent.request_stop)
    try:
        return await agent.run_until_stopped()
    except Exception as error:
        # Start-up failures (journal unusable, printer config unusable) end here.
        log_event("agent_failed", error=repr(error), printer_id=settings.printer_id)
        return 1
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)
