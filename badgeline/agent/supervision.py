"""The agent's loops as supervised tasks: a loop that dies of a bug stops the agent.

Restarting a crashed loop in-process would hide the bug; instead the agent exits
with code 1 and systemd starts it again, which the journal makes safe. A stop
lets each task end on its own within a grace period, then cancels what is left.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from badgeline.log import log_event

# Every loop the agent runs, by the name its task carries (`agent-<name>`).
LOOP_NAMES = ("print", "lease", "probe", "heartbeat", "ack-outbox", "housekeeping",
              "lease-keeper")  # fmt: skip


class LoopSupervisor:
    """Spawns the agent's loops; the first to crash calls `on_crash` (once per crash)."""

    def __init__(self, printer_id: str, on_crash: Callable[[], None]) -> None:
        self.printer_id = printer_id
        self.on_crash = on_crash

    def spawn(self, name: str, loop: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        return asyncio.create_task(self._supervised(name, loop), name=f"agent-{name}")

    async def _supervised(self, name: str, loop: Coroutine[Any, Any, None]) -> None:
        try:
            await loop
        except asyncio.CancelledError:
            raise
        except Exception as error:
            log_event("loop_crashed", logging.CRITICAL, loop=name, error=repr(error),
                      printer_id=self.printer_id)  # fmt: skip
            logging.getLogger(__name__).exception("the %s loop crashed", name)
            self.on_crash()


def not_running(tasks: list[asyncio.Task[None]]) -> list[str]:
    """Names of the loops among `tasks` that have ended."""
    return [task.get_name().removeprefix("agent-") for task in tasks if task.done()]


async def finish(
    tasks: list[asyncio.Task[None]], grace_s: float, on_timeout: Callable[[], None] | None
) -> None:
    """Let tasks end on their own within `grace_s`, then cancel what is left."""
    if not tasks:
        return
    _, pending = await asyncio.wait(tasks, timeout=grace_s)
    if pending and on_timeout is not None:
        on_timeout()
    for task in pending:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
