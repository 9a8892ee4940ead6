"""Print completion: has the badge really come out? ESC/POS `GS ( H` process ID responses.

A printer takes a badge's bytes into its receive buffer long before the badge
is on paper, and DLE EOT answers at once (it is a real-time command), so a
healthy status right after the last byte proves nothing about the paper. A
slow printer that faults with badges in its buffer loses them, and an agent
that confirmed them on a status probe has told the coordinator `printed` for
badges nobody got.

``GS ( H`` fn 48 (``1D 28 48 06 00 30 30 d1 d2 d3 d4``) is not real-time: the
printer answers it, with ``37 22 d1 d2 d3 d4 00``, once it has processed
everything received before it, and "processed" for printing data means
printed (Epson's ESC/POS reference, GS ( H <Function 48>). Data that an
error recovery clears, with the buffer, is never answered. So after a badge
the agent sends a process ID request and waits for its own ID:

- the response arrived: the badge is on paper (``PRINTED``);
- meanwhile the agent polls ``DLE EOT 1`` (soon, then every ``poll_s``), and between
  polls waits on the link for the response, so a badge is confirmed the moment the
  printer answers, not at the next poll; the poll finds out whether the printer went
  offline (jam, cover open, paper end) before answering (``FAULT``), or it
  stopped answering altogether (``SILENT``);
- no response within ``within_s`` although the printer said it was online
  (``TIMED_OUT``): a printer printing far slower than expected, or one that
  ignores GS ( H (see the agent's ``print_confirmation``).

Every outcome but PRINTED leaves the badge's fate unknown: the agent reports
it ``uncertain``. Only a printer that answers status can answer this; a
write-only link has no completion at all.

Replies share one byte stream, which the link's ``ReplySorter`` (replies.py)
splits into process ID responses and status bytes, and keeps across operations.

With badges pipelined (the agent's ``print_pipeline_depth``), the agent writes
each badge followed by its own request and waits for the responses in order,
one ``poll_process_id`` at a time, so it can write the next badge between polls.
"""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from badgeline.agent.printers.link import LinkIo
from badgeline.agent.printers.realtime_status import OFFLINE, StatusQuery
from badgeline.agent.printers.replies import ReplySorter

__all__ = ["Completion", "Outcome", "ProcessIds", "ReplySorter", "await_process_id",
           "poll_process_id", "process_id_request"]  # fmt: skip

PROCESS_ID_REQUEST = b"\x1d\x28\x48\x06\x00\x30\x30"  # GS ( H pL=6 pH=0 fn=48 m=48
POLL_QUERY = StatusQuery.PRINTER.command  # DLE EOT 1: bit 3 is "offline"
DEFAULT_POLL_S = 0.2
# The first poll comes this soon and the interval doubles up to `poll_s`: a printer
# that is done at once (an emulator, a short badge) is confirmed in milliseconds, not
# a whole `poll_s` later, while a slow one is still asked only every `poll_s`.
FIRST_POLL_S = 0.01


class Outcome(StrEnum):
    PRINTED = "printed"
    FAULT = "fault"
    SILENT = "silent"
    TIMED_OUT = "timed_out"
    LINK_LOST = "link_lost"  # the connection broke while waiting
    UNSUPPORTED = "unsupported"  # the link cannot read replies (write-only device node)


@dataclass(frozen=True)
class Completion:
    outcome: Outcome
    detail: str

    @property
    def printed(self) -> bool:
        return self.outcome is Outcome.PRINTED


class ProcessIds:
    """Four ASCII digits per request, counting on from a random start.

    Random so that a response meant for an earlier agent run (USB keeps the
    printer's output across our restarts) is unlikely to match a new request.
    """

    def __init__(self) -> None:
        self._numbers = itertools.count(random.randrange(10_000))

    def next(self) -> bytes:
        return b"%04d" % (next(self._numbers) % 10_000)


def process_id_request(process_id: bytes) -> bytes:
    if len(process_id) != 4 or not all(0x20 <= byte <= 0x7E for byte in process_id):
        raise ValueError(f"a process ID is 4 bytes of 0x20..0x7E, not {process_id!r}")
    return PROCESS_ID_REQUEST + process_id


def await_process_id(
    io: LinkIo,
    process_id: bytes,
    *,
    within_s: float,
    poll_s: float = DEFAULT_POLL_S,
    clock: Callable[[], float] = time.monotonic,
) -> Completion:
    """Send a process ID request after what was written, and wait for its response.

    Blocking; runs under the link's lock (``PrinterLink.converse``), so no
    other query can read the response meanwhile. Link errors propagate (the
    caller maps them).
    """
    io.drain()  # stale status bytes must not be read as a poll's answer (responses are kept)
    io.write(process_id_request(process_id))
    deadline = clock() + within_s
    pause_s = min(FIRST_POLL_S, poll_s)
    while True:
        completion = poll_process_id(io, process_id, min(pause_s, max(0.0, deadline - clock())))
        if completion is not None:
            return completion
        if clock() >= deadline:
            return Completion(
                Outcome.TIMED_OUT,
                f"no process ID response within {within_s:g} s though the printer is online",
            )
        pause_s = min(2 * pause_s, poll_s)


def poll_process_id(io: LinkIo, process_id: bytes, pause_s: float) -> Completion | None:
    """One round of the wait for a requested process ID; None: not yet, ask again later.

    Asks ``DLE EOT 1`` (offline bit) unless an earlier poll's question is still
    unanswered, waits up to `pause_s` for replies (returning as soon as some
    arrive), and reads what came. A printer busy with our bytes answers late:
    its silence counts only once it holds none of them, or took none for its
    stall timeout (``LinkIo.busy``), and its question waited ``timeout_s``
    since it was asked and since the printer took our last byte.
    """
    replies = io.replies
    assert isinstance(replies, ReplySorter)  # an ESC/POS link's (factory.py)
    if replies.claim(process_id):
        return Completion(Outcome.PRINTED, "process ID response received")
    if not replies.unanswered:
        replies.take_status()  # stale: only this poll's answer counts
        io.write(POLL_QUERY)
        replies.asked()
    io.wait(pause_s)
    replies.feed(io.receive())
    if replies.claim(process_id):
        return Completion(Outcome.PRINTED, "process ID response received")
    if replies.status:
        if replies.take_status()[-1] & OFFLINE:
            return Completion(Outcome.FAULT, "the printer went offline before the badge was out")
        return None
    if io.timeout_s > min(replies.waiting_s(), io.quiet_s()) or io.busy():
        return None  # asked, or taken by the printer, too recently; or busy
    replies.forget_questions()
    return Completion(Outcome.SILENT, "the printer stopped answering before the badge was out")
