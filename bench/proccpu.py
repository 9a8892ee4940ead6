"""CPU seconds of a process and all its descendants, from Linux /proc.

A process's own utime + stime, plus cutime + cstime (children it has already
reaped: CUPS's per-job backends, a coordinator's embedded Redis after it
exits), summed over every live descendant. Used by the benchmarks to say which
side of a comparison the machine's two cores went to.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def _parents() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(int(entry.name))) is not None:
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    return children


def tree_cpu_seconds(pids: Iterable[int]) -> float:
    """CPU time used so far by these processes and everything under them."""
    children = _parents()
    seen: set[int] = set()
    stack = list(pids)
    total = 0
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen.add(pid)
        fields = _stat(pid)
        if fields is None:
            continue
        # fields[11..14] = utime, stime, cutime, cstime (proc(5) fields 14-17)
        total += sum(int(value) for value in fields[11:15])
        stack.extend(children.get(pid, []))
    return total / TICK


@contextlib.contextmanager
def priority(niceness: int) -> Iterator[str]:
    """Run this process, and every child it starts meanwhile, at `niceness` (< 0 needs
    root); yields a line saying what was done. On a machine shared with other work, a
    negative value keeps the neighbours' load from starving the processes under test,
    so the figures say what the system does with the cores, not how they were shared.

    With autogroup scheduling (Linux's default on many systems, and on this one) the
    CPU is first shared equally between sessions and a process's niceness only counts
    inside its own session, so the session's autogroup niceness is set too, and put
    back on the way out (the session may hold other work of whoever ran the bench)."""
    if niceness == 0:
        yield "niceness 0 (as started; other work on the machine competes for the cores)"
        return
    try:
        os.setpriority(os.PRIO_PROCESS, 0, niceness)
    except OSError as error:
        yield f"niceness {niceness} refused ({error}); running as started"
        return
    group, before = Path("/proc/self/autogroup"), None
    enabled = Path("/proc/sys/kernel/sched_autogroup_enabled")
    note = ""
    if enabled.exists() and enabled.read_text().strip() == "1":
        try:
            before = group.read_text().split("nice")[-1].strip()
            group.write_text(str(niceness))
            note = " (and its session's scheduler autogroup)"
        except OSError as error:
            before, note = None, f" but not its autogroup ({error}): little effect"
    try:
        yield (f"niceness {niceness}{note}: this bench and all it starts run ahead of other"
               " work on the machine")  # fmt: skip
    finally:
        if before is not None:
            with contextlib.suppress(OSError):
                group.write_text(before)
