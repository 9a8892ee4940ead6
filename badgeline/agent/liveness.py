"""Is a running loop stuck? Every step of every agent loop has a bound; past it, it is.

Printer calls are bounded by the printer's timeouts (and the probe's
backstop), coordinator calls by the request timeout, a badge's preparation
by its budget. A loop past its step's bound is wedged, most likely on a
thread that cannot be interrupted (a read that never returns). Its task is
still alive, so "every loop runs" is not enough: /healthz answers 503 for a
stuck loop, and systemd's watchdog goes unfed, so systemd restarts the agent
(the journal makes a restart safe).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from badgeline.agent.config import AgentSettings
    from badgeline.agent.loops.heartbeat import Heartbeat
    from badgeline.agent.loops.probe import PrinterWatch
    from badgeline.agent.prepare import BadgePreparer
    from badgeline.agent.printers import AsyncPrinterLink

# How far past its own bound a loop's step may run before the agent calls it stuck:
# a few probe intervals, and never less than this.
SLACK_PROBES = 5
MIN_SLACK_S = 2.0


def find_stuck_loops(
    settings: AgentSettings,
    watch: PrinterWatch,
    link: AsyncPrinterLink | None,
    heartbeat: Heartbeat | None,
    preparer: BadgePreparer | None,
) -> dict[str, str]:
    """The stuck loops by name, each with why."""
    stuck: dict[str, str] = {}
    now = time.monotonic()
    slack_s = max(MIN_SLACK_S, SLACK_PROBES * settings.probe_interval_s)
    if link is not None:
        # A probe past its backstop reports the printer unreachable and the loop goes
        # on; probes whose threads never come back are the agent's own fault.
        since_s = now - max(link.last_probe_returned, watch.started_monotonic)
        if since_s > settings.probe_interval_s + link.probe_backstop_s + slack_s:
            stuck["probe"] = f"no printer probe has come back for {since_s:.0f} s"
    if heartbeat is not None:
        quiet_s = now - heartbeat.last_attempt_at
        bound_s = max(heartbeat.interval_s, settings.retry_max_s) + settings.request_timeout_s
        if quiet_s > bound_s + slack_s:
            stuck["heartbeat"] = f"no heartbeat tried for {quiet_s:.0f} s"
    if preparer is not None and (overdue_s := preparer.overdue_s()) > slack_s:
        stuck["lease"] = f"a badge has been prepared for {overdue_s:.0f} s past its budget"
    return stuck
